// One interface over the places an agent's bootstrap runs: a container through the Docker Engine API (podman
// serves it here) or a sandboxed child process. The execution loop starts one sandbox per execution (or per
// resume), the bootstrap inside it talks to the dispatch gateway, and the loop stops and removes it at the end.
import type { Logger } from '../../logging/logger.js';

/** Where the per-execution run directory (holding the dispatch gateway's unix socket) appears inside a sandbox. */
export const SANDBOX_RUN_DIR = '/orch/run';
/** The dispatch gateway's unix socket inside a sandbox; the bootstrap speaks HTTP over it (no network needed). */
export const SANDBOX_GATEWAY_SOCKET = `${SANDBOX_RUN_DIR}/gateway.sock`;
/** File name of the gateway socket inside the host run directory (`/tmp/orch-run-<id>/<execution_id>/gateway.sock`, src/agents/execution/run-dir.ts). */
export const GATEWAY_SOCKET_NAME = 'gateway.sock';

export interface SandboxMount {
  /** Absolute host directory. */
  hostPath: string;
  /** Absolute path inside the sandbox (e.g. /workspace). */
  sandboxPath: string;
  readOnly: boolean;
}

export interface SandboxSpec {
  executionId: string;
  agentId: string;
  /** Container image (docker only). */
  image?: string;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** argv of the main process, e.g. ['node', '/orch/bootstrap.mjs']. */
  command: string[];
  /** Overrides the image's ENTRYPOINT (docker only; `command` then holds its arguments). ContainerRun states set
   * it so that their `command` replaces whatever entrypoint the image declares. */
  entrypoint?: string[];
  /** The ORCH_* variables and the manifest's env; never secrets. */
  env: Record<string, string>;
  /** Environment values that must appear on no host command line (the attestation secret of process isolation,
   * which a host `ps` would otherwise show to every local user): process isolation hands them to bwrap through its
   * own environment, docker through the container's Env. Names the runtime sets, never LD_* or PATH. */
  secretEnv?: Record<string, string>;
  mounts: SandboxMount[];
  /** Host directory of this execution's run dir (e.g. `/tmp/orch-run-<id>/<execution_id>/`), in which the gateway
   * listens on `gateway.sock`; the runtime mounts it read-write at SANDBOX_RUN_DIR. Optional: a caller may put it
   * in `mounts` itself instead. */
  runDir?: string;
  workdir: string;
  /** false → no network at all (docker NetworkMode none; bwrap --unshare-net). The gateway must stay reachable:
   * see each runtime for how it reaches the orchestrator when the network is off. */
  network: boolean;
  /** millicores */
  cpu?: number;
  memoryBytes?: number;
  /** Labels put on the container so that recovery can find orphans (docker); process runtime keeps them in memory. */
  labels: Record<string, string>;
  /** No main process (process isolation, `ContainerRuntime.idleSandboxes`): the sandbox is its spec — mounts,
   * environment, network, user — and every command (exec) runs in a fresh bubblewrap sandbox made from it, with
   * namespaces of its own; nothing runs between commands. `command` is ignored. */
  idle?: boolean;
  /** Run as this unprivileged host uid/gid (tenant commands: System states). Process isolation spawns bubblewrap as
   * that user (an unprivileged user namespace), docker sets the container's User. Absent: the runtime's default
   * (agents: the orchestrator's user mapped into the sandbox). */
  user?: SandboxUser;
}

export interface SandboxUser {
  uid: number;
  gid: number;
}

/** The unprivileged account tenant commands run as unless the node config names another (nobody:nogroup). */
export const DEFAULT_SANDBOX_USER: SandboxUser = { uid: 65534, gid: 65534 };

/** A sandbox could not be made (bubblewrap missing or refused, no container engine): the command did not run, and
 * it is never run outside a sandbox instead. */
export class SandboxUnavailableError extends Error {
  override readonly name = 'SandboxUnavailableError';
}

/** One command in a fresh sandbox, run to its end (ContainerRuntime.run): System states. */
export interface SandboxRunOptions {
  /** Killed (the whole sandbox) after this long; the result then has timed_out. */
  timeoutMs: number;
  /** Per stream; the tail is kept. */
  maxOutputBytes: number;
  /** Aborting kills the sandbox at once. */
  signal?: AbortSignal;
}

export interface SandboxRunResult {
  exit_code: number;
  stdout: string;
  stderr: string;
  duration_ms: number;
  timed_out: boolean;
}

/** Labels every sandbox carries so that recovery (reap) and attestation can find it. */
export const LABEL_EXECUTION_ID = 'orch.execution_id';
export const LABEL_AGENT_ID = 'orch.agent_id';
export const LABEL_NODE_ID = 'orch.node_id';

/** What every runtime is built with. */
export interface RuntimeOptions {
  logger: Logger;
  /** Used for the orch.node_id label when spec.labels has none. */
  nodeId?: string;
}

/** The spec's labels with the execution, agent and node ids. */
export function sandboxLabels(spec: SandboxSpec, nodeId: string | undefined): Record<string, string> {
  return {
    ...spec.labels,
    [LABEL_EXECUTION_ID]: spec.executionId,
    [LABEL_AGENT_ID]: spec.agentId,
    [LABEL_NODE_ID]: spec.labels[LABEL_NODE_ID] ?? nodeId ?? 'unknown',
  };
}

/** The spec's mounts, plus spec.runDir (the dispatch gateway's socket directory) read-write at SANDBOX_RUN_DIR. */
export function sandboxMounts(spec: SandboxSpec): SandboxMount[] {
  const mounts = [...spec.mounts];
  if (spec.runDir) mounts.push({ hostPath: spec.runDir, sandboxPath: SANDBOX_RUN_DIR, readOnly: false });
  return mounts;
}

export interface SandboxHandle {
  /** Container id, or `process-<execution_id>` for process isolation (CONTRACT.md). */
  id: string;
  /** Resolves with the exit code when the main process ends. */
  exited: Promise<number>;
}

/** A second command run inside a live sandbox, beside its main process (cmd.run over SEAL: docker exec; process
 * isolation: a sibling bwrap with the sandbox's mounts, network and environment). No shell is involved. */
export interface SandboxExecRequest {
  command: string;
  args: string[];
  /** Sandbox path of the working directory. */
  cwd: string;
  /** Variables set for this command on top of the sandbox's environment. */
  env?: Record<string, string>;
  timeout_secs: number;
  /** Combined stdout + stderr ceiling; more is tail-trimmed and flagged `truncated`. */
  max_output_bytes: number;
  /** Aborting kills the command at once (its result then has the exit code of SIGKILL). */
  signal?: AbortSignal;
}

export interface SandboxExecResult {
  exit_code: number;
  stdout: string;
  stderr: string;
  duration_ms: number;
  truncated: boolean;
  /** Killed for running longer than timeout_secs. */
  timed_out: boolean;
}

export interface ContainerRuntime {
  readonly kind: 'docker' | 'process';
  /** The runtime can start idle sandboxes (SandboxSpec.idle): an execution then needs no resident bootstrap, its
   * commands run through exec() (process isolation: each in a fresh bubblewrap sandbox). */
  readonly idleSandboxes?: boolean;
  start(spec: SandboxSpec): Promise<SandboxHandle>;
  /** Kills at once (SIGKILL, no grace) and removes; idempotent; resolves when it is gone. */
  stop(id: string): Promise<void>;
  /** Removes every sandbox carrying `label=value` (orphans of a crashed node); returns the ids removed. */
  reap(label: string, value: string): Promise<string[]>;
  /** The URL at which a sandbox reaches the orchestrator's dispatch gateway (the value of ORCH_ORCHESTRATOR_URL).
   * Both runtimes return `unix:///orch/run/gateway.sock` (SANDBOX_GATEWAY_SOCKET): sandboxes usually have no
   * network (NetworkMode none / --unshare-net), so the gateway also listens on a unix socket in the per-execution run
   * directory mounted at SANDBOX_RUN_DIR, and the bootstrap sends HTTP over it
   * (`http.request({ socketPath: new URL(url).pathname, path: '/v1/dispatch-gateway' })`). `port` (the host's HTTP
   * port) is kept for runtimes that reach the host over TCP; the built-in ones ignore it. */
  orchestratorUrl(port: number): string;
  /** Runs a command inside the live sandbox `id`; rejects when the sandbox is not running. */
  exec?(id: string, req: SandboxExecRequest): Promise<SandboxExecResult>;
  /** Starts a fresh sandbox for `spec`, waits for its main process to end (or kills it on timeout / abort), removes
   * it and answers its exit code and output. Rejects with SandboxUnavailableError when no sandbox can be made. */
  run(spec: SandboxSpec, opts: SandboxRunOptions): Promise<SandboxRunResult>;
}
