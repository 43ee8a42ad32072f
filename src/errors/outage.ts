// Which failures are outages of a dependency (PostgreSQL, Redis) and which are terminal, in the manner of Restate's
// retryable and terminal errors. An outage is waited out: background work retries it with backoff, the actor
// supervisor restarts through it without ever giving up, and a request that meets one answers 503 with Retry-After.
// Everything else (a constraint violation, a bug, bad input) is terminal: retrying it would only repeat it.
import { Errors, RetryableError } from './catalog.ts';

/** Seconds a client is told to wait (Retry-After) when a dependency is down. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

/** Which dependency is down, for logs, metrics and the 503 message. */
export type Dependency = 'database' | 'redis';

/**
 * A dependency is unreachable or dropped the connection. Retryable (maps to 503 / UNAVAILABLE); `cause` keeps the
 * driver's error for the log.
 */
export class DependencyUnavailable extends RetryableError {
  constructor(
    readonly dependency: Dependency,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, { ...options, kind: Errors.UNAVAILABLE });
    this.name = 'DependencyUnavailable';
  }
}

/** Socket-level failures of a connection (node's error codes). */
const NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN', 'ENOTFOUND', 'EAI_AGAIN', 'ENOTCONN']);

/**
 * SQLSTATEs that say the server or the connection is going away, not that the statement was wrong: class 08
 * (connection exception), 57P01–57P03 (admin/crash shutdown, cannot connect now), 53300 (too many connections)
 * and CockroachDB's 40003 (statement completion unknown) — the last is ambiguous about the commit, which is why
 * only whole idempotent units (an actor's recovery from its row) are retried on it.
 */
function isOutageSqlState(code: string): boolean {
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300' || code === '40003';
}

/** Messages of node-postgres and ioredis that carry no code but mean the connection is gone. */
const OUTAGE_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect/,
  /^Client has encountered a connection error and is not queryable/,
  /^Client was closed and is not queryable/,
  /^Connection is closed\.?$/,
  /^Reached the max retries per request limit/,
  /^Stream isn't writeable/,
  /the database system is (starting up|shutting down|in recovery mode)/,
  /^terminating connection due to/,
];

/**
 * True when `err` (or any error in its `cause` chain) is a connection-class failure of a dependency: a retry
 * after the dependency returns can succeed. False for constraint violations, syntax errors, bad input, bugs.
 */
export function isOutage(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 8; depth++) {
    if (e instanceof DependencyUnavailable) return true;
    if (typeof e !== 'object') return false;
    const { code, name, message } = e as { code?: unknown; name?: unknown; message?: unknown };
    if (typeof code === 'string' && (NET_CODES.has(code) || (/^[0-9A-Z]{5}$/.test(code) && isOutageSqlState(code)))) return true;
    if (name === 'MaxRetriesPerRequestError') return true;
    if (typeof message === 'string' && OUTAGE_MESSAGES.some((re) => re.test(message))) return true;
    // AggregateError (a connect that tried IPv4 and IPv6) holds its causes in `errors`.
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.some((inner) => isOutage(inner))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The driver error as a DependencyUnavailable when it is an outage; anything else unchanged. */
export function asOutage(dependency: Dependency, err: unknown): unknown {
  if (err instanceof DependencyUnavailable || !isOutage(err)) return err;
  const detail = err instanceof Error ? err.message : String(err);
  return new DependencyUnavailable(dependency, `${dependency} unavailable: ${detail}`, { cause: err });
}
