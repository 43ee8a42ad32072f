// Retries of LLM calls: exponential backoff with full jitter on 429, 5xx and connection failures, honouring
// Retry-After (and retry-after-ms); never on other 4xx, never after the caller's signal fired. The SDKs' own retries
// are off so that this is the one policy. Terminal failures become OrchError; when the attempts run out the last
// retryable failure is surfaced as a RetryableError with the SDK error as its cause.
import { Errors, OrchError, RetryableError, type ErrorSpec } from '../../errors/catalog.ts';

export interface LlmRetryOptions {
  /** Total attempts including the first (default 4). */
  attempts: number;
  /** Backoff base: attempt n waits a random time in [0, base·2^(n-1)] capped by maxDelayMs (default 250 ms). */
  baseDelayMs: number;
  /** Cap of the computed backoff (default 8 s). */
  maxDelayMs: number;
  /** Cap of a server-requested Retry-After wait (default 60 s); longer requests are shortened to this. */
  maxRetryAfterMs: number;
}

export const DEFAULT_LLM_RETRY: LlmRetryOptions = { attempts: 4, baseDelayMs: 250, maxDelayMs: 8000, maxRetryAfterMs: 60_000 };

/** What a retry looks like, for logs (no message content). */
export interface LlmRetryEvent {
  attempt: number;
  delayMs: number;
  status?: number;
  error: string;
}

interface HttpishError {
  status?: unknown;
  headers?: Headers | Record<string, string | undefined>;
  code?: unknown;
  message?: string;
  cause?: unknown;
}

function header(err: unknown, name: string): string | undefined {
  const h = (err as HttpishError | undefined)?.headers;
  if (!h || typeof h !== 'object') return undefined;
  if (typeof (h as Headers).get === 'function') return (h as Headers).get(name) ?? undefined;
  const rec = h as Record<string, string | undefined>;
  return rec[name] ?? rec[name.toLowerCase()];
}

/** The HTTP status of an SDK error, when the server answered. */
export function llmErrorStatus(err: unknown): number | undefined {
  const s = (err as HttpishError | undefined)?.status;
  return typeof s === 'number' && s > 0 ? s : undefined;
}

const NET_CODES = /^(ECONNREFUSED|ECONNRESET|ECONNABORTED|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|UND_ERR_\w+)$/;

type ErrorClass = abstract new (...args: never[]) => Error;
const abortErrors: ErrorClass[] = [];
const connectionErrors: ErrorClass[] = [];

/** Called by sdks.ts as each SDK loads: its abort error (never retried) and connection error (always retried). */
export function registerSdkErrors(sdk: { APIUserAbortError: ErrorClass; APIConnectionError: ErrorClass }): void {
  if (!abortErrors.includes(sdk.APIUserAbortError)) abortErrors.push(sdk.APIUserAbortError);
  if (!connectionErrors.includes(sdk.APIConnectionError)) connectionErrors.push(sdk.APIConnectionError);
}

function isConnectionError(err: unknown): boolean {
  if (abortErrors.some((c) => err instanceof c)) return false;
  if (connectionErrors.some((c) => err instanceof c)) return true;
  // A bare fetch/undici failure (or one wrapped as a cause): the request never got an answer.
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as HttpishError).cause, depth++) {
    const code = (e as HttpishError).code;
    if (typeof code === 'string' && NET_CODES.test(code)) return true;
    if (/^(fetch failed|socket hang up)$/i.test((e as HttpishError).message ?? '')) return true;
  }
  return false;
}

export function isRetryableLlmError(err: unknown): boolean {
  if (err instanceof RetryableError) return true;
  const status = llmErrorStatus(err);
  if (status !== undefined) return status === 429 || status >= 500;
  return isConnectionError(err);
}

/** The wait the server asked for (`retry-after-ms`, `retry-after` in seconds or as an HTTP date), if any. */
export function retryAfterMs(err: unknown): number | undefined {
  const ms = Number(header(err, 'retry-after-ms'));
  if (header(err, 'retry-after-ms') !== undefined && Number.isFinite(ms) && ms >= 0) return ms;
  const raw = header(err, 'retry-after');
  if (raw === undefined || raw.trim() === '') return undefined;
  const secs = Number(raw);
  if (Number.isFinite(secs)) return Math.max(0, secs * 1000);
  const at = Date.parse(raw);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function abortedError(signal: AbortSignal, cause: unknown): OrchError {
  const reason = signal.reason as { name?: string; message?: string } | undefined;
  const why = reason?.name === 'TimeoutError' ? 'timed out' : `aborted${reason?.message ? ` (${reason.message})` : ''}`;
  return new OrchError(Errors.UNAVAILABLE, `LLM request ${why}`, { cause, details: { aborted: true } });
}

function terminalSpec(status: number | undefined): ErrorSpec {
  if (status === undefined) return Errors.INTERNAL;
  // A rejected key or an unknown model/endpoint is a configuration problem of the provider entry.
  if (status === 401 || status === 403 || status === 404) return Errors.CONFIG_INVALID;
  return Errors.BAD_REQUEST;
}

/**
 * Runs `fn` until it succeeds, fails terminally, the attempts run out, or `signal` fires. Throws OrchError
 * (terminal; `details.status` when the server answered), RetryableError (attempts exhausted on 429/5xx/connection
 * failures; RESOURCE_EXHAUSTED for a final 429) or, after an abort, OrchError with `details.aborted`.
 */
export async function withLlmRetry<T>(
  fn: (attempt: number) => Promise<T>,
  signal: AbortSignal | undefined,
  options: Partial<LlmRetryOptions> = {},
  onRetry?: (e: LlmRetryEvent) => void,
): Promise<T> {
  const opts: LlmRetryOptions = { ...DEFAULT_LLM_RETRY, ...options };
  const attempts = Math.max(1, Math.floor(opts.attempts));
  let last: unknown;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (signal?.aborted) throw abortedError(signal, last ?? signal.reason);
    try {
      return await fn(attempt);
    } catch (err) {
      last = err;
      if (signal?.aborted) throw abortedError(signal, err);
      if (err instanceof OrchError && !(err instanceof RetryableError)) throw err;
      const status = llmErrorStatus(err);
      if (!isRetryableLlmError(err)) {
        throw new OrchError(terminalSpec(status), `LLM request refused${status ? ` (${status})` : ''}: ${messageOf(err)}`, {
          cause: err,
          ...(status ? { details: { status } } : {}),
        });
      }
      if (attempt === attempts) break;
      const backoff = Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** (attempt - 1));
      const asked = retryAfterMs(err);
      const delayMs = Math.round(asked !== undefined ? Math.min(asked, opts.maxRetryAfterMs) : Math.random() * backoff);
      onRetry?.({ attempt, delayMs, error: messageOf(err), ...(status ? { status } : {}) });
      try {
        await sleep(delayMs, signal);
      } catch {
        throw abortedError(signal!, err);
      }
    }
  }
  const status = llmErrorStatus(last);
  throw new RetryableError(`LLM request failed after ${attempts} attempt(s): ${messageOf(last)}`, {
    cause: last,
    ...(status === 429 ? { kind: Errors.RESOURCE_EXHAUSTED } : {}),
    ...(status ? { details: { status } } : {}),
  });
}
