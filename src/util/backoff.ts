// Capped exponential backoff with jitter, for waiting out a dependency outage. "Equal jitter": half the step is
// fixed, half random, so that retries spread apart (no thundering herd when the database returns) but never come
// back immediately.

export interface BackoffPolicy {
  /** The first delay. */
  baseMs: number;
  /** No delay is longer than this. */
  capMs: number;
}

/** 100 ms, 200 ms, … up to 5 s: a returning database is noticed within ~5 s, and an outage costs few attempts. */
export const OUTAGE_BACKOFF: BackoffPolicy = { baseMs: 100, capMs: 5_000 };

/** The delay before retry number `attempt` (1-based), with jitter. */
export function backoffDelay(attempt: number, policy: BackoffPolicy = OUTAGE_BACKOFF, random: () => number = Math.random): number {
  const step = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  return Math.round(step / 2 + random() * (step / 2));
}

/** Resolves after `ms`, or at once (rejecting with the signal's reason) when `signal` aborts. */
export function sleepUnless(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
