// Retrying a database call on a background path (sweepers, lease renewals, recording a give-up) through an outage:
// connection-class failures (src/errors/outage.ts) are retried with capped exponential backoff and jitter until the
// database answers or the caller stops; anything else (a constraint violation, a bug) is thrown at once, never retried.
// Request paths do not use this: they answer 503 with Retry-After and let the client retry.
import { isOutage } from '../errors/outage.ts';
import type { Logger } from '../logging/logger.ts';
import { backoffDelay, OUTAGE_BACKOFF, sleepUnless, type BackoffPolicy } from '../util/backoff.ts';

export interface OutageRetryOptions {
  /** Stops the retrying (shutdown); the last error is thrown. */
  signal?: AbortSignal;
  /** Give up after this long in an outage and throw the last error. Default: never. */
  maxElapsedMs?: number;
  backoff?: BackoffPolicy;
  logger?: Logger;
  /** Names the call in the log. */
  what?: string;
}

export async function retryThroughOutage<T>(fn: () => Promise<T>, options: OutageRetryOptions = {}): Promise<T> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!isOutage(err) || options.signal?.aborted) throw err;
      if (options.maxElapsedMs !== undefined && Date.now() - started >= options.maxElapsedMs) throw err;
      const delay = backoffDelay(attempt, options.backoff ?? OUTAGE_BACKOFF);
      // The first retry is logged at warn, later ones at debug: an outage of a minute must not flood the log.
      const level = attempt === 1 ? 'warn' : 'debug';
      options.logger?.[level]({ err, attempt, delayMs: delay, what: options.what }, 'dependency unavailable; retrying');
      try {
        await sleepUnless(delay, options.signal);
      } catch {
        throw err;
      }
    }
  }
}
