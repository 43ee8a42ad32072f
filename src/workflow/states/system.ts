// The System state (seed 002): a Handlebars-rendered shell command run with `sh -c` on the orchestrator host through
// the ExecuteSystemCommand path (src/agents/system-command.ts), with rendered env values and a workdir. The built-in
// commands `update_blackboard {json}` and `update_context {json}` (CONTRACT.md) start no shell: they merge the
// rendered JSON object (or, with nothing after the name, the rendered env pairs) into the blackboard or into
// `workflow.context`.
import { mkdir, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runSystemCommand } from '../../agents/system-command.ts';
import type { SystemState } from '../manifest/types.ts';
import type { StateResult, StateRunContext, StateRunner } from '../engine/runner-types.ts';

const BUILTIN = /^\s*(update_blackboard|update_context)(?:\s+([\s\S]*))?$/;
const DEFAULT_WORKDIR = '/workspace';

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

/** The host directory the command runs in: the state's workdir, or a per-run directory for the absent default. */
async function workdirOf(state: SystemState, ctx: StateRunContext): Promise<string> {
  const wanted = ctx.render(state.workdir || DEFAULT_WORKDIR);
  const exists = await stat(wanted).then((s) => s.isDirectory(), () => false);
  if (exists) return wanted;
  if (wanted !== DEFAULT_WORKDIR) throw new Error(`workdir ${wanted} does not exist on the orchestrator host`);
  // `/workspace` is a container path; on a host without it, each run gets its own scratch directory.
  const dir = path.join(os.tmpdir(), 'orch-workflows', ctx.workflowExecutionId);
  await mkdir(dir, { recursive: true });
  return dir;
}

export function systemRunner(): StateRunner<SystemState> {
  return async (state, ctx) => {
    const command = ctx.render(state.command);
    const b = BUILTIN.exec(command);
    if (b) return builtin(b[1]!, b[2], state, ctx);
    const r = await runSystemCommand(
      { command, env: renderEnv(state, ctx), workdir: await workdirOf(state, ctx), timeoutSeconds: state.timeout_seconds },
      ctx.signal,
    );
    const status = r.exit_code === 0 ? 'success' : 'failed';
    return result(status, r.stdout, r.stderr, r.exit_code, status === 'failed' ? `command exited with code ${r.exit_code}` : undefined);
  };
}
