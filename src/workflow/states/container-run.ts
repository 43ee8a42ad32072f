// The ContainerRun state (seed 002, format 1.1): one command in an isolated container, no LLM, no iteration loop.
// Retries: `retry.max_attempts` total attempts; a failed attempt (non-zero exit or resources.timeout) is followed,
// after `retry.backoff` seconds doubling each time, by a fresh container. A container that cannot be created at all
// (missing image under pull policy Never, an undeclared volume) fails at once: trying again cannot fix it.
import type { StateResult, StateRunContext, StateRunner } from '../engine/runner-types.ts';
import type { ContainerRunState } from '../manifest/types.ts';
import { runContainerAttempt, type ContainerAttempt, type ContainerDeps } from './container-step.ts';

export type ContainerRunDeps = ContainerDeps;

/** The blackboard entry of one container: seed 002 fields (exit_code, stdout, stderr, duration_ms) plus flags. */
export function containerOutput(a: ContainerAttempt, attempts?: number): Record<string, unknown> {
  return {
    exit_code: a.exit_code,
    stdout: a.stdout,
    stderr: a.stderr,
    duration_ms: a.duration_ms,
    ...(a.stdout_truncated ? { stdout_truncated: true } : {}),
    ...(a.stderr_truncated ? { stderr_truncated: true } : {}),
    ...(a.timed_out ? { timed_out: true } : {}),
    ...(a.error !== undefined ? { error: a.error } : {}),
    ...(attempts !== undefined ? { attempts } : {}),
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted || ms <= 0) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

export function containerRunRunner(deps: ContainerRunDeps): StateRunner<ContainerRunState> {
  return async (state: ContainerRunState, ctx: StateRunContext): Promise<StateResult> => {
    const log = ctx.logger.child({ state: ctx.stateName, visit: ctx.visit });
    const maxAttempts = Math.max(1, state.retry.max_attempts);
    let attempt: ContainerAttempt | undefined;
    let n = 0;
    for (n = 1; n <= maxAttempts; n++) {
      attempt = await runContainerAttempt(state, ctx, deps, ctx.visitKey);
      log.info({ attempt: n, exit_code: attempt.exit_code, duration_ms: attempt.duration_ms, error: attempt.error }, 'container attempt finished');
      if (attempt.exit_code === 0 && !attempt.timed_out && !attempt.aborted) break;
      if (attempt.aborted || attempt.exit_code === null || n === maxAttempts) break;
      await sleep(state.retry.backoff_seconds * 1000 * 2 ** (n - 1), ctx.signal);
      if (ctx.signal.aborted) break;
    }
    const a = attempt as ContainerAttempt;
    const attempts = Math.min(n, maxAttempts);
    const ok = a.exit_code === 0 && !a.timed_out && !a.aborted;
    const output = containerOutput(a, attempts);
    return {
      output: { status: ok ? 'success' : 'failed', output, ...output },
      outcome: { kind: 'ContainerRun', status: ok ? 'success' : 'failed', ...(a.exit_code !== null ? { exit_code: a.exit_code } : {}) },
      ...(ok ? {} : { error: a.error ?? `container exited with code ${a.exit_code}` + (attempts > 1 ? ` after ${attempts} attempts` : '') }),
    };
  };
}
