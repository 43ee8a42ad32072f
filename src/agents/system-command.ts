// ExecuteSystemCommand (seed 000): a shell command ON THE ORCHESTRATOR HOST with env, workdir and timeout, for the
// OPERATOR only (src/gateway/grpc/execution-handlers.ts refuses every other role). Nothing a tenant defines comes
// here: workflow System states run in a sandbox (src/workflow/states/system.ts; docs/SECURITY.md). Output is captured up to a ceiling per stream (tail kept); a timeout kills the
// whole process group and reports exit code 124, as timeout(1) does.
import { spawn } from 'node:child_process';

export interface SystemCommandRequest {
  command: string;
  env?: Record<string, string>;
  workdir?: string | undefined;
  timeoutSeconds?: number | undefined;
  /** Per stream; default 1 MB. */
  maxOutputBytes?: number;
}

export interface SystemCommandResult {
  exit_code: number;
  stdout: string;
  stderr: string;
  duration_ms: number;
  timed_out: boolean;
}

const DEFAULT_TIMEOUT_S = 300;
const DEFAULT_MAX = 1024 * 1024;

class Tail {
  private chunks: Buffer[] = [];
  private size = 0;
  constructor(private readonly max: number) {}
  push(b: Buffer): void {
    this.chunks.push(b);
    this.size += b.length;
    while (this.size > this.max && this.chunks.length > 1) this.size -= this.chunks.shift()!.length;
  }
  text(): string {
    const all = Buffer.concat(this.chunks);
    return (all.length > this.max ? all.subarray(all.length - this.max) : all).toString('utf8');
  }
}

export function runSystemCommand(req: SystemCommandRequest, signal?: AbortSignal): Promise<SystemCommandResult> {
  const started = Date.now();
  const max = req.maxOutputBytes ?? DEFAULT_MAX;
  const timeoutMs = Math.max(1, req.timeoutSeconds || DEFAULT_TIMEOUT_S) * 1000;
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', req.command], {
      cwd: req.workdir || undefined,
      env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', ...(req.env ?? {}) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const out = new Tail(max);
    const err = new Tail(max);
    let timedOut = false;
    const kill = (): void => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, timeoutMs);
    const onAbort = (): void => kill();
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      reject(e);
    });
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve({
        exit_code: timedOut ? 124 : (code ?? (sig ? 128 + 9 : -1)),
        stdout: out.text(),
        stderr: err.text() + (timedOut ? `\ncommand timed out after ${timeoutMs / 1000} s` : ''),
        duration_ms: Date.now() - started,
        timed_out: timedOut,
      });
    });
  });
}
