// The state runners a node gives its workflow engine, from the capabilities it has: Agent and ParallelAgents over
// the agents capability, ContainerRun and ParallelContainerRun over its Docker runtime (when one answers). System and
// Subworkflow are added by the engine's capability itself. A kind left out fails its state with a clear reason.
import type { AgentSource, ExecutionService } from '../../agents/execution/service.ts';
import { DockerRuntime } from '../../agents/runtime/docker.ts';
import type { ContainerRuntime } from '../../agents/runtime/types.ts';
import type { Queryable } from '../../storage/db.ts';
import type { StateRunner } from '../engine/runner-types.ts';
import type { StateKind } from '../manifest/types.ts';
import { agentRunner } from './agent.ts';
import { containerRunRunner } from './container-run.ts';
import { parallelAgentsRunner } from './parallel-agents.ts';
import { parallelContainerRunRunner } from './parallel-container-run.ts';
import type { VolumeResolver, VolumeSettler } from './container-step.ts';

export function workflowStateRunners(o: {
  executions: () => ExecutionService | undefined;
  agents: AgentSource;
  /** For the Agent score (judges' verdicts in the execution journal). */
  db?: Queryable;
  docker?: ContainerRuntime | undefined;
  /** Host paths of spec.storage volumes; absent: a state that mounts one fails naming it. */
  resolveVolume?: VolumeResolver;
  /** Re-measures a workflow volume after a container wrote to it through a bind mount. */
  settleVolume?: VolumeSettler;
}): Partial<Record<StateKind, StateRunner<never>>> {
  const runners: Partial<Record<StateKind, StateRunner<never>>> = {
    Agent: agentRunner({ executions: o.executions, agents: o.agents, ...(o.db ? { db: o.db } : {}) }) as StateRunner<never>,
    ParallelAgents: parallelAgentsRunner({ executions: o.executions, agents: o.agents }) as StateRunner<never>,
  };
  if (o.docker instanceof DockerRuntime) {
    const resolveVolume: VolumeResolver =
      o.resolveVolume ??
      (async (ref) => {
        throw new Error(`workflow volume "${ref.name}" is not available: spec.storage volumes are not provisioned on this node`);
      });
    const deps = { runtime: o.docker, resolveVolume, ...(o.settleVolume ? { settleVolume: o.settleVolume } : {}) };
    runners.ContainerRun = containerRunRunner(deps) as StateRunner<never>;
    runners.ParallelContainerRun = parallelContainerRunRunner(deps) as StateRunner<never>;
  }
  return runners;
}
