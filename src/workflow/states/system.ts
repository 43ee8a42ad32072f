// The System state (seed 002): a shell command run with `sh -c` IN A SANDBOX, never on the orchestrator host. It
// runs in the node's sandbox runtime for tenant commands (src/agents/runtime: bubblewrap under `process` isolation,
// a podman/Docker container under `docker`), with
//   - the run's workspace at /workspace: spec.storage.workspace when the workflow declares one, else a scratch
//     directory of the run (shared by its System states, seen by nothing else);
//   - exactly the state's declared `env` (rendered) plus the template values (below): never the node's environment;
//   - an unprivileged uid (default 65534), no view of the data directory, other volumes or host processes;
//   - no network unless the node config allows it (runtime.system_state_network).
// Where no sandbox can be made the state FAILS with the reason: it is never run unsandboxed instead.
//
// Template values are data: `{{…}}` in `command` reach the shell as ORCH_VALUE_<n> environment variables that the
// script references (src/workflow/template/shell.ts), so a value is printed, never executed.
//
// The built-in commands `update_blackboard {json}` and `update_context {json}` (CONTRACT.md) start no shell: they
// merge the rendered JSON object (or, with nothing after the name, the rendered env pairs) into the blackboard or
// into `workflow.context`.
import { chown, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_SANDBOX_USER, SandboxUnavailableError, type ContainerRuntime, type SandboxMount, type SandboxUser } from '../../agents/runtime/types.ts';
import type { SystemState } from '../manifest/types.ts';
import type { StateResult, StateRunContext, StateRunner } from '../engine/runner-types.ts';
import type { VolumeResolver, VolumeSettler, VolumeUse } from './container-step.ts';

const BUILTIN = /^\s*(update_blackboard|update_context)(?:\s+([\s\S]*))?$/;

/**
 * A System state whose command is a built-in: it starts no process and touches nothing outside the run's own
 * snapshot (its result is a function of the rendered command), so running it acts on nothing and announces nothing.
 */
export function isBuiltinCommand(command: string): boolean {
  return BUILTIN.test(command);
}
export const WORKSPACE_PATH = '/workspace';
const DEFAULT_TIMEOUT_S = 300;
/** Per stream, the tail kept (as ExecuteSystemCommand keeps it). */
const MAX_OUTPUT_BYTES = 1024 * 1024;

/** Where and how System states run: the node's choice (src/node/node.ts), or the default bubblewrap sandbox. */
export interface SystemSandbox {
  /** The runtime System states run in, or the reason there is none (the state then fails with it). */
  runtime(): ContainerRuntime | string;
  /** The image under docker isolation (default: the runtime's, localhost/orch-runtime:latest). */
  image?: string;
  /** The unprivileged host uid/gid the command runs as; default 65534:65534. */
  user?: SandboxUser;
  /** Runs without spec.storage.workspace get `<scratchDir>/<workflow execution id>` as their /workspace. */
  scratchDir: string;
  /** The host directory of spec.storage.workspace for one use (WorkflowStorage.acquire); release with settleVolume. */
  resolveVolume?: VolumeResolver;
  settleVolume?: VolumeSettler;
  /** Network inside the sandbox; default none. */
  network?: boolean;
  maxOutputBytes?: number;
}

function result(status: 'success' | 'failed', stdout: string, stderr: string, exit_code: number, error?: string): StateResult {
  return {
    output: { status, output: { stdout, stderr, exit_code } },
    outcome: { kind: 'System', status, exit_code },
    ...(error ? { error } : {}),
  };
}

function renderEnv(state: SystemState, ctx: StateRunContext): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(state.env ?? {})) env[k] = ctx.render(String(v));
  return env;
}

function builtin(name: string, rest: string | undefined, state: SystemState, ctx: StateRunContext): StateResult {
  let patch: Record<string, unknown>;
  const text = (rest ?? '').trim();
  if (text === '') {
    patch = renderEnv(state, ctx);
  } else {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      const msg = `${name}: the argument is not valid JSON (${(err as Error).message}): ${text.slice(0, 200)}`;
      return result('failed', '', msg, 1, msg);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      const msg = `${name}: the argument must be a JSON object`;
      return result('failed', '', msg, 1, msg);
    }
    patch = parsed as Record<string, unknown>;
  }
  const out = result('success', JSON.stringify(patch), '', 0);
  return name === 'update_blackboard' ? { ...out, blackboardPatch: patch } : { ...out, contextPatch: patch };
}

/** The command's user must be able to write its workspace: the mount's top directory is handed to it (only that
 * directory; what agents wrote inside keeps its owner). A non-root orchestrator runs commands as itself. */
async function handOver(dir: string, user: SandboxUser, ctx: StateRunContext): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const st = await stat(dir);
  if (st.uid === user.uid && st.gid === user.gid) return;
  await chown(dir, user.uid, user.gid).catch((err: unknown) =>
    ctx.logger.warn({ dir, err: err instanceof Error ? err.message : String(err) }, 'the workspace could not be handed to the sandbox user; it may be read-only there'));
}

/** A failed result for a command that never ran, with the reason in stderr and error. */
function notRun(reason: string): StateResult {
  return result('failed', '', reason, -1, reason);
}

export function systemRunner(sandbox: SystemSandbox): StateRunner<SystemState> {
  const user = sandbox.user ?? DEFAULT_SANDBOX_USER;
  return async (state, ctx) => {
    const b = BUILTIN.exec(state.command);
    if (b) return builtin(b[1]!, b[2] === undefined ? undefined : ctx.render(b[2]), state, ctx);

    let script: string;
    let values: Record<string, string>;
    try {
      ({ script, env: values } = ctx.renderShell(state.command));
    } catch (err) {
      return notRun(`the command was not run: ${(err as Error).message}`);
    }
    const workdir = ctx.render(state.workdir || WORKSPACE_PATH);
    if (!path.posix.isAbsolute(workdir)) return notRun(`workdir ${workdir} is not an absolute path in the sandbox`);
    const runtime = sandbox.runtime();
    if (typeof runtime === 'string') return notRun(`System state needs a sandbox and none is available: ${runtime}; the command was not run`);

    let use: VolumeUse | undefined;
    try {
      let hostDir: string;
      if (ctx.storage.workspace) {
        if (!sandbox.resolveVolume) return notRun('spec.storage.workspace is not available to System states on this node');
        use = { tenantId: ctx.tenantId, workflowExecutionId: ctx.workflowExecutionId, name: 'workspace', volumeId: ctx.storage.workspace, mountPath: WORKSPACE_PATH, readOnly: false };
        hostDir = await sandbox.resolveVolume(use);
      } else {
        hostDir = path.join(sandbox.scratchDir, ctx.workflowExecutionId);
        await mkdir(hostDir, { recursive: true, mode: 0o700 });
      }
      await handOver(hostDir, user, ctx);
      const mounts: SandboxMount[] = [{ hostPath: hostDir, sandboxPath: WORKSPACE_PATH, readOnly: false }];
      const r = await runtime.run(
        {
          executionId: `${ctx.workflowExecutionId}-${ctx.stateName}-${ctx.visit}`,
          agentId: `workflow-state:${ctx.stateName}`,
          ...(sandbox.image ? { image: sandbox.image } : {}),
          command: ['/bin/sh', '-c', script],
          env: { HOME: WORKSPACE_PATH, ...renderEnv(state, ctx), ...values },
          mounts,
          workdir,
          network: sandbox.network === true,
          labels: { 'orch.workflow_execution_id': ctx.workflowExecutionId, 'orch.workflow_state': ctx.stateName },
          user,
        },
        { timeoutMs: (state.timeout_seconds || DEFAULT_TIMEOUT_S) * 1000, maxOutputBytes: sandbox.maxOutputBytes ?? MAX_OUTPUT_BYTES, signal: ctx.signal },
      );
      const status = r.exit_code === 0 ? 'success' : 'failed';
      return result(status, r.stdout, r.stderr, r.exit_code, status === 'failed' ? (r.timed_out ? `command killed after ${state.timeout_seconds || DEFAULT_TIMEOUT_S} s` : `command exited with code ${r.exit_code}`) : undefined);
    } catch (err) {
      if (err instanceof SandboxUnavailableError) return notRun(`System state needs a sandbox and none could be made: ${err.message}`);
      return notRun(`the command could not be started in its sandbox: ${(err as Error).message}`);
    } finally {
      if (use) await sandbox.settleVolume?.(use).catch((e: unknown) => ctx.logger.warn({ err: e instanceof Error ? e.message : String(e) }, 'releasing the workspace failed'));
    }
  };
}
