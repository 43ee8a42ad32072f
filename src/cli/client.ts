// The CLI's HTTP client: --url/--token or ORCH_URL/ORCH_TOKEN, JSON in and out, errors as one line.
import { CliError } from './output.ts';

export interface ClientOptions {
  url?: string;
  token?: string;
}

export class ApiClient {
  readonly baseUrl: string;
  private readonly token: string | undefined;

  constructor(opts: ClientOptions, env: NodeJS.ProcessEnv) {
    this.baseUrl = (opts.url ?? env.ORCH_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
    this.token = opts.token ?? env.ORCH_TOKEN;
  }

  /** A request whose body the caller reads (streams); non-2xx answers still fail as one line. */
  async raw(method: string, path: string): Promise<Response> {
    const headers: Record<string, string> = {};
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${path}`, { method, headers });
    } catch (err) {
      throw new CliError(`cannot reach ${this.baseUrl}: ${(err as Error).message}`);
    }
    if (!res.ok) throw new CliError(`${method} ${path} failed with ${res.status}: ${await res.text()}`);
    return res;
  }

  /** Sends raw bytes (an upload) and answers the JSON reply; failures as one line like request(). */
  async upload<T>(method: string, path: string, data: Uint8Array, contentType = 'application/octet-stream'): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json', 'content-type': contentType };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${path}`, { method, headers, body: data });
    } catch (err) {
      throw new CliError(`cannot reach ${this.baseUrl}: ${(err as Error).message}`);
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    if (!res.ok) {
      throw new CliError(`${method} ${path} failed with ${res.status}: ${failureText(parsed, text)}`);
    }
    return parsed as T;
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (err) {
      throw new CliError(`cannot reach ${this.baseUrl}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`);
    }
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    if (!res.ok) {
      throw new CliError(`${method} ${path} failed with ${res.status}: ${failureText(parsed, text)}`);
    }
    return parsed as T;
  }
}

/**
 * The one line a failed call prints: the body's `error`, followed by its `errors` list when it has one (a 422 of
 * manifest validation names every field there; printing only the summary hid what to fix).
 */
export function failureText(parsed: unknown, text: string): string {
  if (typeof parsed !== 'object' || parsed === null || !('error' in parsed)) return text;
  const body = parsed as { error: unknown; errors?: unknown; details?: unknown };
  const head = String(body.error);
  // Agent routes answer `errors`; the shared error handler puts a list in `details`.
  const list = Array.isArray(body.errors) ? body.errors : Array.isArray(body.details) ? body.details : [];
  if (list.length === 0) return head;
  const items = list.map((e: unknown) => {
    if (typeof e === 'string') return e;
    if (typeof e === 'object' && e !== null) {
      const o = e as { field?: unknown; path?: unknown; message?: unknown };
      const where = o.field ?? o.path;
      if (o.message !== undefined) return where !== undefined ? `${String(where)}: ${String(o.message)}` : String(o.message);
    }
    return JSON.stringify(e);
  });
  return `${head} (${items.join('; ')})`;
}
