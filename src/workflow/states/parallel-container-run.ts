// The ParallelContainerRun state (seed 002, format 1.1): every step starts together, the state finishes when all
// have finished, and the completion strategy decides the status: all_succeed (every step exits 0), any_succeed (at
// least one does), best_effort (always success; per-step results are on the blackboard). Steps have no retry.
import type { StateResult, StateRunContext, StateRunner } from '../engine/runner-types.ts';
import type { ParallelContainerRunState } from '../manifest/types.ts';
import { containerOutput } from './container-run.ts';
import { runContainerAttempt, type ContainerDeps } from './container-step.ts';

export type ParallelContainerRunDeps = ContainerDeps;

export function parallelContainerRunRunner(deps: ParallelContainerRunDeps): StateRunner<ParallelContainerRunState> {
  return async (state: ParallelContainerRunState, ctx: StateRunContext): Promise<StateResult> => {
    const attempts = await Promise.all(
      state.steps.map((step) => runContainerAttempt(step, ctx, deps, `${ctx.visitKey}:${step.name}`)),
    );
    const succeeded = attempts.map((a) => a.exit_code === 0 && !a.timed_out && !a.aborted);
    const aborted = attempts.some((a) => a.aborted);
    let ok: boolean;
    switch (state.completion) {
      case 'all_succeed':
        ok = succeeded.every(Boolean);
        break;
      case 'any_succeed':
        ok = succeeded.some(Boolean);
        break;
      case 'best_effort':
        ok = true;
        break;
    }
    // A cancelled or timed-out state is not a success whatever the strategy: its steps were killed.
    if (aborted) ok = false;
    const perStep: Record<string, unknown> = {};
    state.steps.forEach((step, i) => {
      const a = attempts[i];
      if (a) perStep[step.name] = { status: succeeded[i] ? 'success' : 'failed', ...containerOutput(a) };
    });
    const failedNames = state.steps.filter((_s, i) => !succeeded[i]).map((s) => s.name);
    ctx.logger.info({ state: ctx.stateName, completion: state.completion, failed: failedNames }, 'parallel containers finished');
    return {
      output: { status: ok ? 'success' : 'failed', output: perStep, completion: state.completion },
      outcome: { kind: 'ParallelContainerRun', status: ok ? 'success' : 'failed' },
      ...(ok ? {} : {
        error: aborted
          ? 'the state was aborted while its containers ran'
          : `completion ${state.completion} not met: failed steps ${failedNames.join(', ')}`,
      }),
    };
  };
}
