// The knee of a load ladder: the highest offered load the node carries within its latency bound. A step passes when
// its p99 is under the bound, it carried ≥ 90 % of what was offered and < 1 % of its operations failed; the knee is
// the highest passing step below the first failing one (a later pass after a failure is noise, not capacity).
import type { StepResult } from './load.ts';

export const CARRIED_SHARE = 0.9;
export const FAILED_SHARE = 0.01;

export function stepPasses(s: StepResult, boundMs: number): boolean {
  const attempted = s.ok + s.failed + s.shed;
  return s.p99Ms <= boundMs && s.achieved >= CARRIED_SHARE * s.offered && (attempted === 0 || (s.failed + s.shed) / attempted < FAILED_SHARE);
}

/** Why a step fails, in words for the report ('' when it passes). */
export function failureReason(s: StepResult, boundMs: number): string {
  const why: string[] = [];
  if (s.p99Ms > boundMs) why.push(`p99 ${s.p99Ms.toFixed(0)} ms > ${boundMs} ms`);
  if (s.achieved < CARRIED_SHARE * s.offered) why.push(`carried ${((s.achieved / s.offered) * 100).toFixed(0)} % of the offered load`);
  const attempted = s.ok + s.failed + s.shed;
  if (attempted > 0 && (s.failed + s.shed) / attempted >= FAILED_SHARE) why.push(`${s.failed} failed, ${s.shed} shed${s.firstError ? ` (${s.firstError.slice(0, 80)})` : ''}`);
  return why.join('; ');
}

/** The knee: the last passing step before the first failing one; undefined when the first step already fails. */
export function knee(steps: readonly StepResult[], boundMs: number): StepResult | undefined {
  let best: StepResult | undefined;
  for (const s of steps) {
    if (!stepPasses(s, boundMs)) break;
    best = s;
  }
  return best;
}

/**
 * Runs `step` at each rate in turn, stopping after the first failing step (the knee is behind it) or once the
 * time budget is spent. With `retryFailed`, a failing step is run once more and counts as failing only if it fails
 * again (on a shared machine one burst from elsewhere can push a short step's p99 over); the second run's figures
 * are kept. Returns the steps kept, one per rate.
 */
export async function ladder(
  rates: readonly number[],
  boundMs: number,
  step: (rate: number) => Promise<StepResult>,
  o: { budgetMs?: number; retryFailed?: boolean; onRetry?: (first: StepResult) => void } = {},
): Promise<StepResult[]> {
  const steps: StepResult[] = [];
  const deadline = performance.now() + (o.budgetMs ?? Number.POSITIVE_INFINITY);
  for (const rate of rates) {
    let s = await step(rate);
    if (o.retryFailed && !stepPasses(s, boundMs)) {
      o.onRetry?.(s);
      s = await step(rate);
    }
    steps.push(s);
    if (!stepPasses(s, boundMs) || performance.now() > deadline) break;
  }
  return steps;
}
