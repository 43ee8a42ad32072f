// The transaction retry loop both adapters share. CockroachDB answers contention with SQLSTATE 40001 ("restart
// transaction") and expects the client to run the whole transaction again; PostgreSQL under SERIALIZABLE does the
// same. Retrying is bounded so that a hot spot surfaces as an error instead of an endless loop.
import { RetryableError } from '../errors/catalog.ts';

export interface RetryOptions {
  /** Total attempts including the first one. Default 10. */
  maxAttempts?: number;
  /** Upper bound of the first backoff; each later one doubles, up to maxDelayMs. Default 5 ms. */
  baseDelayMs?: number;
  /** Default 250 ms. */
  maxDelayMs?: number;
}

/**
 * Raised by code that detected a conflict the database reported in another way (for example a duplicate sequence
 * number written by a concurrent transaction): it is retried exactly like SQLSTATE 40001.
 */
export class SerializationConflict extends Error {
  readonly code = '40001';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SerializationConflict';
  }
}

/** True for SQLSTATE 40001 (serialization_failure) as pg, PGlite and CockroachDB report it. */
export function isSerializationFailure(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '40001';
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Runs `attempt` until it succeeds, retrying only serialization failures. "Full jitter" backoff spreads the
 * contenders apart so that they stop colliding. `attempt` is given its 1-based attempt number.
 */
export async function withTxRetry<T>(attempt: (n: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const maxAttempts = Math.max(1, options.maxAttempts ?? 10);
  const base = options.baseDelayMs ?? 5;
  const cap = options.maxDelayMs ?? 250;
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (!isSerializationFailure(err)) throw err;
      if (n >= maxAttempts) {
        throw new RetryableError(`transaction still conflicting after ${n} attempts`, { cause: err });
      }
      await sleep(Math.random() * Math.min(cap, base * 2 ** (n - 1)));
    }
  }
}
