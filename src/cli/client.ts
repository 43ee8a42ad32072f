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
      const msg = typeof parsed === 'object' && parsed !== null && 'error' in parsed ? String((parsed as { error: unknown }).error) : text;
      throw new CliError(`${method} ${path} failed with ${res.status}: ${msg}`);
    }
    return parsed as T;
  }
}
