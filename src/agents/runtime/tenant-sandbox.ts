// The sandbox settings a node derives from its config (runtime.*): the process runtime's mode, and the runtime
// System states run in. Kept in one place so that the agents capability and the workflow engine never disagree on
// whether a sandbox is required (it always is, unless the operator set runtime.unsandboxed_process).
import path from 'node:path';
import type { NodeConfig } from '../../config/types.ts';
import type { Logger } from '../../logging/logger.ts';
import { createRuntime, dockerAvailable, DEFAULT_DOCKER_HOST } from './select.ts';
import type { ProcessRuntimeOptions } from './process.ts';
import type { ContainerRuntime, SandboxUser } from './types.ts';

/** ProcessRuntime options from the config: bubblewrap always, except the operator's explicit unsandboxed mode. */
export function processRuntimeOptions(config: NodeConfig): Partial<Omit<ProcessRuntimeOptions, 'logger' | 'nodeId'>> {
  return {
    sandbox: config.runtime.unsandboxed_process ? 'none' : 'bwrap',
    ...(config.runtime.bwrap_path ? { bwrapPath: config.runtime.bwrap_path } : {}),
  };
}

/** Logs, loudly, that this node runs sandboxes as plain host processes (runtime.unsandboxed_process). */
export function warnIfUnsandboxed(config: NodeConfig, log: Logger): void {
  if (!config.runtime.unsandboxed_process) return;
  log.warn(
    { setting: 'runtime.unsandboxed_process' },
    '!!! UNSANDBOXED: runtime.unsandboxed_process is true: agents and workflow System states run as PLAIN PROCESSES ON THIS ' +
      'HOST with its filesystem and network. Only for a single trusted developer; never on a node tenants use. !!!',
  );
}

export function sandboxUserOf(config: NodeConfig): SandboxUser {
  return { uid: config.runtime.sandbox_uid, gid: config.runtime.sandbox_gid };
}

/** Scratch workspaces of runs without spec.storage.workspace: `<data_dir>/workflow-scratch/<run id>`. */
export function scratchDirOf(config: NodeConfig): string {
  return path.join(config.dataDir, 'workflow-scratch');
}

/**
 * The runtime System states run in: the node's default isolation, taken from the agents capability when it made
 * one, else made here (a controller runs no agents). A string is why there is none: those states then fail.
 */
export async function systemStateRuntime(
  config: NodeConfig,
  existing: Partial<Record<'process' | 'docker', ContainerRuntime>> | undefined,
  log: Logger,
): Promise<ContainerRuntime | string> {
  const kind = config.runtime.default_isolation;
  const have = existing?.[kind];
  if (have) return have;
  const base = { logger: log, nodeId: config.node.id };
  if (kind === 'process') return createRuntime('process', { ...base, process: processRuntimeOptions(config) });
  const dockerHost = config.runtime.docker_host ?? DEFAULT_DOCKER_HOST;
  if (await dockerAvailable(dockerHost)) return createRuntime('docker', { ...base, dockerHost });
  return `docker isolation is configured but no container engine answers at ${dockerHost}`;
}
