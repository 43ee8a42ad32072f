// One JSON POST over node:http(s) with a keep-alive agent per provider: what a chat completion needs and no more.
// The OpenAI SDK's path (fetch, undici's Request/Response and web streams, its header and retry machinery) cost
// 1.2–1.8 ms of CPU per call against ~0.3 ms here (issue 24: two model turns per execution were ~15 % of a node's CPU
// per execution). Failures keep the shape retry.ts classifies: an HTTP answer ≥ 400 throws LlmHttpError (status,
// headers), a transport failure throws the socket's error with its code (ECONNREFUSED, ECONNRESET, ETIMEDOUT), an
// abort throws the signal's reason.
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';

/** A model server's answer is small JSON; anything past this is not one and is refused rather than buffered. */
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** The server answered with an error status. `headers` carries Retry-After for retry.ts. */
export class LlmHttpError extends Error {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string | undefined>,
    message: string,
  ) {
    super(message);
    this.name = 'LlmHttpError';
  }
}

export interface JsonPostOptions {
  headers: Record<string, string>;
  signal?: AbortSignal | undefined;
  /** No byte from the server for this long ends the request with ETIMEDOUT (retryable). */
  idleTimeoutMs: number;
}

/** Keep-alive agents for one endpoint; `close()` drops the idle sockets. */
export class JsonPoster {
  private readonly httpAgent = new http.Agent({ keepAlive: true, scheduling: 'lifo' });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, scheduling: 'lifo' });

  post(url: URL, body: unknown, opts: JsonPostOptions): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const signal = opts.signal;
      if (signal?.aborted) return reject(signal.reason);
      const data = Buffer.from(JSON.stringify(body));
      const secure = url.protocol === 'https:';
      const req = (secure ? https : http).request(url, {
        method: 'POST',
        agent: secure ? this.httpsAgent : this.httpAgent,
        headers: { ...opts.headers, 'content-type': 'application/json', accept: 'application/json', 'content-length': String(data.length) },
      });
      const onAbort = (): void => {
        req.destroy(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = (fn: () => void): void => {
        signal?.removeEventListener('abort', onAbort);
        fn();
      };
      req.setTimeout(opts.idleTimeoutMs, () => {
        req.destroy(Object.assign(new Error(`no answer from ${url.host} within ${opts.idleTimeoutMs} ms`), { code: 'ETIMEDOUT' }));
      });
      req.on('error', (err) => done(() => reject(signal?.aborted ? signal.reason : err)));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_RESPONSE_BYTES) {
            res.destroy();
            done(() => reject(new Error(`the model server's answer exceeds ${MAX_RESPONSE_BYTES} bytes`)));
            return;
          }
          chunks.push(c);
        });
        res.on('error', (err) => done(() => reject(signal?.aborted ? signal.reason : err)));
        res.on('end', () =>
          done(() => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            if (status >= 400 || status < 200) return reject(new LlmHttpError(status, flatHeaders(res.headers), errorMessage(status, text)));
            try {
              resolve(JSON.parse(text));
            } catch {
              reject(new Error(`the model server answered ${status} with a body that is not JSON: ${text.slice(0, 200)}`));
            }
          }),
        );
      });
      req.end(data);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

function flatHeaders(h: IncomingHttpHeaders): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(h)) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/** `<status> <the server's error message>`: OpenAI-compatible servers answer `{"error": {"message": ...}}`. */
function errorMessage(status: number, text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const msg = typeof body.error === 'string' ? body.error : body.error?.message ?? body.message;
    if (typeof msg === 'string' && msg) return `${status} ${msg}`;
  } catch {
    // not JSON: the raw text below
  }
  return `${status} ${text.slice(0, 500) || 'status code (no body)'}`;
}
