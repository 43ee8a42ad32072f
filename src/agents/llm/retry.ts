// Retries of LLM calls: exponential backoff with full jitter on 429, 5xx and connection failures, honouring
// Retry-After; never on other 4xx, never after the caller's signal fired. The SDKs' own retries are off so that
// this is the one policy.
import { Errors, OrchError, RetryableError } from '../../errors/catalog.ts';

export interface LlmRetryOptions {
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_LLM_RETRY: LlmRetryOptions = { attempts: 4, baseDelayMs: 250, maxDelayMs: 8000 };

interface HttpishError {
  status?: number;
  headers?: Headers | Record<string, string | undefined>;
  name?: string;
  message?: string;
}

function header(err: HttpishError, name: string): string | undefined {
  const h = err.headers;
  if (!h) return undefined;
  if (typeof (h as Headers).get === 'function') return (h as Headers).get(name) ?? undefined;
  return (h as Record<string, string | undefined>)[name];
}

export function isRetryableLlmError(err: unknown): boolean {
  const e = err as HttpishError;
  if (typeof e?.status === 'number') return e.status === 429 || e.status >= 500;
  // No status: the request never got an answer (connection refused or reset, DNS).
  return e?.name === 'APIConnectionError' || /ECONNREFUSED|ECONNRESET|socket hang up|fetch failed/i.test(e?.message ?? '');
}

function retryAfterMs(err: unknown): number | undefined {
  const raw = header(err as HttpishError, 'retry-after');
  if (!raw) return undefined;
  const secs = Number(raw);
  if (Number.isFinite(secs)) return secs * 1000;
  const at = Date.parse(raw);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

export async function withLlmRetry<T>(fn: () => Promise<T>, signal: AbortSignal | undefined, opts: LlmRetryOptions = DEFAULT_LLM_RETRY): Promise<T> {
  let last: unknown;
  for (let attempt = 1; attempt <= opts.attempts; attempt++) {
    try {
      return await fn();
    } catch (err) {
      last = err;
      if (signal?.aborted) throw err;
      if (!isRetryableLlmError(err)) {
        const status = (err as HttpishError).status;
        throw new OrchError(Errors.BAD_REQUEST, `LLM request refused${status ? ` (${status})` : ''}: ${(err as Error).message}`, { cause: err });
      }
      if (attempt === opts.attempts) break;
      const backoff = Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** (attempt - 1));
      await sleep(Math.min(opts.maxDelayMs, retryAfterMs(err) ?? Math.random() * backoff), signal);
    }
  }
  throw new RetryableError(`LLM request failed after ${opts.attempts} attempts: ${(last as Error)?.message ?? String(last)}`, { cause: last });
}
