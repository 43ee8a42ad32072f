// Shared by the live-feed tests (and the dashboard browser test): in-process orch nodes over a throwaway PostgreSQL
// database (optionally on Redis), dev tokens, a WebSocket client that records every message, and agents that make
// long event streams against the scripted LLM server.
import WebSocket from 'ws';
import { startTestNode as startInProcessNode, type Defer, type TestNode as InProcessNode } from '../support/in-process-node.ts';

export type { Defer };

export interface TestNode extends InProcessNode {
  /** The live feed's WebSocket URL. */
  ws: string;
}

/** A hybrid node (process isolation) on the caller's database, optionally on Redis and the scripted LLM. */
export async function startTestNode(
  defer: Defer,
  o: { databaseUrl: string; redisUrl?: string; llmUrl?: string; dataDir?: string; id?: string; extra?: string },
): Promise<TestNode> {
  const { extra, ...rest } = o;
  const n = await startInProcessNode(defer, { name: 'ws', role: 'hybrid', ...rest, extraYaml: extra });
  return { ...n, ws: `${n.http.replace(/^http/, 'ws')}/v1/ws` };
}

export type FeedMessage = Record<string, unknown> & { stream?: string; seq?: number };

/** A feed client: every message kept in arrival order; `until` waits for a predicate over them. */
export class FeedClient {
  readonly messages: FeedMessage[] = [];
  readonly socket: WebSocket;
  readonly opened: Promise<void>;
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: Array<() => void> = [];

  constructor(url: string, o: { token?: string } = {}) {
    this.socket = new WebSocket(url, o.token ? { headers: { authorization: `Bearer ${o.token}` } } : {});
    this.opened = new Promise((resolve, reject) => {
      this.socket.once('open', () => resolve());
      this.socket.once('error', reject);
    });
    this.closed = new Promise((resolve) => this.socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    this.socket.on('error', () => undefined);
    this.socket.on('message', (data: Buffer) => {
      this.messages.push(JSON.parse(data.toString()) as FeedMessage);
      for (const w of this.waiters) w();
    });
    this.socket.on('close', () => {
      for (const w of this.waiters) w();
    });
  }

  send(msg: unknown): void {
    this.socket.send(JSON.stringify(msg));
  }

  of(stream: string): FeedMessage[] {
    return this.messages.filter((m) => m.stream === stream);
  }

  async until<T>(probe: (c: FeedClient) => T | undefined, timeoutMs = 20_000, what = 'feed condition'): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = probe(this);
      if (v !== undefined && v !== false) return v;
      if (Date.now() > deadline) throw new Error(`${what} not reached in ${timeoutMs} ms; last messages: ${JSON.stringify(this.messages.slice(-5))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 100);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      this.waiters = [];
    }
  }

  kill(): void {
    this.socket.terminate();
  }
}

/** An agent whose every iteration fails validation (the model never answers JSON): about four events per iteration. */
export const refiningAgent = (name: string, iterations: number): string => `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: ${name}, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: Answer in JSON. }
  execution: { mode: iterative, max_iterations: ${iterations}, validation: [ { type: json_schema, schema: { type: object, required: [answer] } } ] }
  tools: [ fs.read ]
`;

export const humanWorkflow = (name: string): string => `apiVersion: orch.dev/v1
kind: Workflow
metadata:
  name: ${name}
  version: 1.0.0
spec:
  initial_state: prep
  states:
    prep:
      kind: System
      command: 'update_blackboard {"prepared": true}'
      transitions: [{ target: gate }]
    gate:
      kind: Human
      prompt: 'Ship it?'
      transitions:
        - { condition: input_equals_yes, target: ship }
        - { condition: input_equals_no, target: stop }
    ship:
      kind: System
      command: 'update_blackboard {"shipped": true}'
      transitions: []
    stop:
      kind: System
      command: 'update_blackboard {"shipped": false}'
      transitions: []
`;

/** Event seqs of an entity stream as the feed delivered them. */
export function seqsOf(messages: FeedMessage[], stream: string): number[] {
  return messages.filter((m) => m.stream === stream && typeof m.seq === 'number').map((m) => m.seq!);
}

export const TERMINAL_EXECUTION = (m: FeedMessage): boolean => 'execution_completed' in m || 'execution_failed' in m;
