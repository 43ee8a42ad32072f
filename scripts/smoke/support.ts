// Shared by the image and compose smoke checks (scripts/image-smoke.sh, scripts/compose-smoke.sh): the podman CLI,
// HTTP against a node's published port, waiting for conditions, and a report of named checks and timings. These run
// as scripts, not in the orchestrator: console output is their interface.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** Runs a command; resolves with stdout, rejects with its stderr in the message. */
export async function run(cmd: string, args: string[], o: { timeoutMs?: number; env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<string> {
  try {
    const { stdout } = await exec(cmd, args, { timeout: o.timeoutMs ?? 300_000, maxBuffer: 64 << 20, env: o.env ?? process.env, ...(o.cwd ? { cwd: o.cwd } : {}) });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${(e.stderr ?? '').trim().split('\n').slice(-5).join(' | ') || e.message}`);
  }
}

export const podman = (...args: string[]): Promise<string> => run('podman', args);

export interface HttpAnswer {
  status: number;
  text: string;
  json: unknown;
  headers: Headers;
}

export async function http(base: string, path: string, o: { method?: string; token?: string; body?: unknown; yaml?: string; timeoutMs?: number } = {}): Promise<HttpAnswer> {
  const headers: Record<string, string> = {};
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  let body: string | undefined;
  if (o.yaml !== undefined) {
    headers['content-type'] = 'application/yaml';
    body = o.yaml;
  } else if (o.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(o.body);
  }
  const res = await fetch(`${base}${path}`, { method: o.method ?? (body === undefined ? 'GET' : 'POST'), headers, ...(body !== undefined ? { body } : {}), signal: AbortSignal.timeout(o.timeoutMs ?? 30_000) });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json, headers: res.headers };
}

/** Polls `probe` until it returns a value (not undefined); throws naming `what` after `ms`. */
export async function until<T>(probe: () => Promise<T | undefined>, ms: number, what: string, everyMs = 500): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      // A probe that knows waiting cannot help (the container exited) ends the wait at once.
      if ((err as { fatal?: boolean }).fatal) throw err;
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Named checks with their durations; `summary()` prints them and says whether all held. */
export class Report {
  private readonly rows: { name: string; ok: boolean; ms: number; detail: string }[] = [];

  constructor(private readonly title: string) {}

  async check<T>(name: string, fn: () => Promise<T>, detail?: (v: T) => string): Promise<T | undefined> {
    const t0 = Date.now();
    try {
      const v = await fn();
      const row = { name, ok: true, ms: Date.now() - t0, detail: detail ? detail(v) : '' };
      this.rows.push(row);
      process.stdout.write(`ok   ${name} (${(row.ms / 1000).toFixed(1)} s)${row.detail ? ` — ${row.detail}` : ''}\n`);
      return v;
    } catch (err) {
      const row = { name, ok: false, ms: Date.now() - t0, detail: (err as Error).message };
      this.rows.push(row);
      process.stdout.write(`FAIL ${name} (${(row.ms / 1000).toFixed(1)} s) — ${row.detail}\n`);
      return undefined;
    }
  }

  get ok(): boolean {
    return this.rows.length > 0 && this.rows.every((r) => r.ok);
  }

  summary(): string {
    const failed = this.rows.filter((r) => !r.ok).map((r) => r.name);
    return `${this.title}: ${this.rows.length - failed.length}/${this.rows.length} checks held${failed.length ? `; FAILED: ${failed.join('; ')}` : ' OK'}`;
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
