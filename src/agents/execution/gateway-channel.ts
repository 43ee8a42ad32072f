// The dispatch gateway protocol of seed 000 between the bootstrap inside the sandbox and this execution's loop.
// The bootstrap only ever asks ("generate", "dispatch_result"); each of its HTTP requests is held open until the
// loop has the next thing for it to do, which is the response: a `dispatch` (run this command) or a `final` (the
// iteration's answer). After a `final` the bootstrap asks `generate` again for the next iteration. When the
// execution has ended the parked request, and every later one, is answered `{"type":"done"}` (our addition: it tells
// the bootstrap to exit). So the loop lives in the orchestrator, where it is journaled; the bootstrap is a thin
// executor that holds no state worth losing.

export interface GenerateMessage {
  type: 'generate';
  execution_id: string;
  agent_id?: string;
  iteration_number: number;
  model_alias?: string;
  prompt?: string;
  messages?: unknown[];
}

export interface DispatchResultMessage {
  type: 'dispatch_result';
  execution_id: string;
  dispatch_id: string;
  exit_code: number;
  stdout: string;
  stderr: string;
  duration_ms: number;
  truncated: boolean;
}

export type InboundMessage = GenerateMessage | DispatchResultMessage;

export interface DispatchMessage {
  type: 'dispatch';
  dispatch_id: string;
  action: 'exec';
  command: string;
  args: string[];
  cwd: string;
  env_additions: Record<string, string>;
  timeout_secs: number;
  max_output_bytes: number;
}

export interface FinalMessage {
  type: 'final';
  content: string;
  tool_calls_executed: number;
  conversation: unknown[];
}

export type OutboundMessage = DispatchMessage | FinalMessage | { type: 'done' };

export class GatewayProtocolError extends Error {}

/** Validates an inbound body; throws GatewayProtocolError with a reason the route returns as 400. */
export function parseInbound(body: unknown): InboundMessage {
  const m = body as Record<string, unknown> | null;
  if (!m || typeof m !== 'object') throw new GatewayProtocolError('body must be a JSON object');
  if (typeof m.execution_id !== 'string' || m.execution_id === '') throw new GatewayProtocolError('execution_id is required');
  if (m.type === 'generate') {
    if (typeof m.iteration_number !== 'number') throw new GatewayProtocolError('generate: iteration_number must be an integer');
    return m as unknown as GenerateMessage;
  }
  if (m.type === 'dispatch_result') {
    if (typeof m.dispatch_id !== 'string') throw new GatewayProtocolError('dispatch_result: dispatch_id is required');
    if (typeof m.exit_code !== 'number') throw new GatewayProtocolError('dispatch_result: exit_code must be an integer');
    return {
      type: 'dispatch_result',
      execution_id: m.execution_id,
      dispatch_id: m.dispatch_id,
      exit_code: m.exit_code,
      stdout: typeof m.stdout === 'string' ? m.stdout : '',
      stderr: typeof m.stderr === 'string' ? m.stderr : '',
      duration_ms: typeof m.duration_ms === 'number' ? m.duration_ms : 0,
      truncated: m.truncated === true,
    };
  }
  throw new GatewayProtocolError(`unknown message type ${JSON.stringify(m.type)}; expected generate or dispatch_result`);
}

interface Waiter<T> {
  resolve(v: T): void;
  reject(e: Error): void;
}

function aborted(signal: AbortSignal | undefined): Error {
  const reason = signal?.reason as unknown;
  return reason instanceof Error ? reason : new Error('aborted');
}

export class GatewayChannel {
  private parked: Waiter<OutboundMessage> | undefined;
  private parkedWaiters: Waiter<void>[] = [];
  private pendingGenerate: GenerateMessage | undefined;
  private generateWaiter: Waiter<GenerateMessage> | undefined;
  private readonly results = new Map<string, Waiter<DispatchResultMessage>>();
  private closed = false;
  /** Time the first `generate` arrived (bench: ExecuteAgent → first generate). */
  firstGenerateAt: number | undefined;

  constructor(readonly executionId: string) {}

  /** An HTTP request from the bootstrap; resolves with its response. */
  receive(msg: InboundMessage): Promise<OutboundMessage> {
    if (this.closed) return Promise.resolve({ type: 'done' });
    if (msg.type === 'generate') {
      this.firstGenerateAt ??= Date.now();
      if (this.generateWaiter) {
        const w = this.generateWaiter;
        this.generateWaiter = undefined;
        w.resolve(msg);
      } else {
        this.pendingGenerate = msg;
      }
    } else {
      const waiter = this.results.get(msg.dispatch_id);
      if (waiter) {
        this.results.delete(msg.dispatch_id);
        waiter.resolve(msg);
      }
      // An unknown dispatch_id (a result from before a restart) is dropped; the bootstrap just gets its next task.
    }
    return this.park();
  }

  private park(): Promise<OutboundMessage> {
    // One bootstrap, one outstanding request: a newer request supersedes an older parked one (a restarted bootstrap).
    if (this.parked) this.parked.resolve({ type: 'done' });
    return new Promise<OutboundMessage>((resolve, reject) => {
      this.parked = { resolve, reject };
      const ws = this.parkedWaiters;
      this.parkedWaiters = [];
      for (const w of ws) w.resolve();
    });
  }

  private async respond(out: OutboundMessage, signal?: AbortSignal): Promise<void> {
    while (!this.parked) {
      if (this.closed) throw new Error('gateway closed');
      await new Promise<void>((resolve, reject) => {
        const w: Waiter<void> = { resolve, reject };
        this.parkedWaiters.push(w);
        signal?.addEventListener('abort', () => reject(aborted(signal)), { once: true });
      });
    }
    const p = this.parked;
    this.parked = undefined;
    p.resolve(out);
  }

  /** Waits for the bootstrap's next `generate` (the start of an iteration). */
  awaitGenerate(signal?: AbortSignal): Promise<GenerateMessage> {
    if (this.pendingGenerate) {
      const g = this.pendingGenerate;
      this.pendingGenerate = undefined;
      return Promise.resolve(g);
    }
    return new Promise<GenerateMessage>((resolve, reject) => {
      if (signal?.aborted) return reject(aborted(signal));
      this.generateWaiter = { resolve, reject };
      signal?.addEventListener(
        'abort',
        () => {
          if (this.generateWaiter?.resolve === resolve) this.generateWaiter = undefined;
          reject(aborted(signal));
        },
        { once: true },
      );
    });
  }

  /** Sends a command to the bootstrap and waits for its result. */
  async dispatch(msg: DispatchMessage, signal?: AbortSignal): Promise<DispatchResultMessage> {
    const result = new Promise<DispatchResultMessage>((resolve, reject) => {
      this.results.set(msg.dispatch_id, { resolve, reject });
      signal?.addEventListener(
        'abort',
        () => {
          this.results.delete(msg.dispatch_id);
          reject(aborted(signal));
        },
        { once: true },
      );
    });
    await this.respond(msg, signal);
    return result;
  }

  /** Ends the iteration for the bootstrap. */
  final(msg: FinalMessage, signal?: AbortSignal): Promise<void> {
    return this.respond(msg, signal);
  }

  /** The execution is over: answer `done` now and to every later request. */
  close(): void {
    this.closed = true;
    this.parked?.resolve({ type: 'done' });
    this.parked = undefined;
    const err = new Error('gateway closed');
    this.generateWaiter?.reject(err);
    this.generateWaiter = undefined;
    for (const w of this.results.values()) w.reject(err);
    this.results.clear();
    for (const w of this.parkedWaiters) w.reject(err);
    this.parkedWaiters = [];
  }
}
