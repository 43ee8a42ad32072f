// The sandbox settings a node derives from its config (runtime.*): the process runtime's mode, and the runtime
// System states run in. Kept in one place so that the agents capability and the workflow engine never disagree on
// whether a sandbox is required (it always is, unless the operator set runtime.unsandboxed_process).
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Queryable } from '../../storage/db.ts';
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
    ...(config.runtime.slirp4netns_path ? { slirp4netnsPath: config.runtime.slirp4netns_path } : {}),
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

/**
 * Removes the scratch workspaces of runs that are no longer live (terminal, or deleted by retention), every
 * `intervalMs`: one primary-key lookup per sweep for the directories present. Answers the function that stops it.
 */
export function startScratchSweeper(o: { db: Queryable; scratchDir: string; logger: Logger; intervalMs?: number }): () => void {
  const sweep = async (): Promise<void> => {
    const names = (await readdir(o.scratchDir).catch(() => [] as string[])).filter((n) => UUID.test(n));
    if (names.length === 0) return;
    const live = await o.db.query<{ id: string }>(
      `SELECT id::TEXT AS id FROM workflow_executions WHERE id = ANY($1::UUID[]) AND status IN ('running', 'waiting_for_human_input')`,
      [names],
    );
    const keep = new Set(live.rows.map((r) => r.id));
    for (const n of names) {
      if (keep.has(n)) continue;
      await rm(path.join(o.scratchDir, n), { recursive: true, force: true }).catch((err: unknown) =>
        o.logger.warn({ dir: n, err: err instanceof Error ? err.message : String(err) }, 'removing a scratch workspace failed'));
    }
  };
  const timer = setInterval(() => void sweep().catch((err: unknown) => o.logger.warn({ err }, 'scratch workspace sweep failed')), o.intervalMs ?? 600_000);
  timer.unref();
  return () => clearInterval(timer);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
