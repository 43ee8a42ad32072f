// The two container state runners bound to a node's docker runtime and volume service, for the engine's runner map:
//   startWorkflowCapability({ ..., runners: { ...containerRunners({ runtime, volumes }) } })
import type { DockerRuntime } from '../../agents/runtime/docker.ts';
import type { StateRunner } from '../engine/runner-types.ts';
import { containerRunRunner } from './container-run.ts';
import { parallelContainerRunRunner } from './parallel-container-run.ts';
import type { ContainerDeps } from './container-step.ts';

export function containerRunners(o: {
  runtime: DockerRuntime;
  /** The volume service (src/volumes/service.ts): the host directory of a tenant's volume. */
  volumes: { hostPath(tenantId: string, id: string): Promise<string>; recount?(tenantId: string, id: string): Promise<unknown> };
  maxCaptureBytes?: number;
}): { ContainerRun: StateRunner<never>; ParallelContainerRun: StateRunner<never> } {
  const deps: ContainerDeps = {
    runtime: o.runtime,
    resolveVolume: ({ tenantId, volumeId }) => o.volumes.hostPath(tenantId, volumeId),
    ...(o.volumes.recount ? { settleVolume: async (u) => void (u.readOnly ? undefined : await o.volumes.recount!(u.tenantId, u.volumeId)) } : {}),
    ...(o.maxCaptureBytes !== undefined ? { maxCaptureBytes: o.maxCaptureBytes } : {}),
  };
  return {
    ContainerRun: containerRunRunner(deps) as StateRunner<never>,
    ParallelContainerRun: parallelContainerRunRunner(deps) as StateRunner<never>,
  };
}
