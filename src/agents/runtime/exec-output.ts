// Output of a command run inside a sandbox (ContainerRuntime.exec), kept the way the bootstrap keeps a dispatched
// command's: combined stdout + stderr over max_output_bytes is tail-trimmed (stderr keeps its tail, stdout gets what
// is left of the budget) and flagged `truncated`; memory stays bounded at twice the ceiling per stream.
import type { SandboxExecResult } from './types.ts';

function tail(chunks: Buffer[], max: number): Buffer {
  const all = Buffer.concat(chunks);
  return all.length > max ? all.subarray(all.length - max) : all;
}

export class ExecOutput {
  private readonly out: Buffer[] = [];
  private readonly err: Buffer[] = [];
  private total = 0;
  private truncated = false;
  private readonly max: number;
  readonly started = Date.now();

  constructor(maxOutputBytes: number) {
    this.max = Math.max(1, maxOutputBytes);
  }

  private push(list: Buffer[], chunk: Buffer): void {
    this.total += chunk.length;
    list.push(chunk);
    if (this.total > this.max) this.truncated = true;
    const size = list.reduce((n, b) => n + b.length, 0);
    if (size > 2 * this.max) list.splice(0, list.length, tail(list, this.max));
  }

  stdout = (chunk: Buffer): void => this.push(this.out, chunk);
  stderr = (chunk: Buffer): void => this.push(this.err, chunk);

  result(exitCode: number, timedOut: boolean, timeoutSecs: number): SandboxExecResult {
    let stderr = tail(this.err, this.max).toString('utf8');
    const stdoutBudget = Math.max(0, this.max - Math.min(Buffer.byteLength(stderr), this.max));
    const stdout = tail(this.out, this.truncated ? stdoutBudget : this.max).toString('utf8');
    if (timedOut) stderr += `\n[orch] command killed after ${timeoutSecs} s`;
    return { exit_code: exitCode, stdout, stderr, duration_ms: Date.now() - this.started, truncated: this.truncated, timed_out: timedOut };
  }
}

/** The last `max` bytes of one stream (a one-shot sandbox run's stdout or stderr); memory stays under twice that. */
export class StreamTail {
  private chunks: Buffer[] = [];
  private size = 0;
  private readonly max: number;

  constructor(maxBytes: number) {
    this.max = Math.max(1, maxBytes);
  }

  push = (chunk: Buffer): void => {
    this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.size > 2 * this.max) {
      this.chunks = [tail(this.chunks, this.max)];
      this.size = this.max;
    }
  };

  text(): string {
    return tail(this.chunks, this.max).toString('utf8');
  }
}
