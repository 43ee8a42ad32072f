// The chaos suite's load: workflow runs started through the public API of whichever front door (controller or
// hybrid) is up — `POST /v1/workflows/{name}/run`, signed webhooks and `POST /v1/stimuli` with idempotency keys.
// A delivery with a key is retried (same key, maybe another node) until it gets a definite answer: a start or
// `idempotent_duplicate`; so a fault between the write and the answer shows up as a retry, never as a second run.
// A direct run has no key: it is sent once (a retry could legitimately start a second run).
import { createHmac } from 'node:crypto';
import type { ChaosCluster } from './cluster.ts';

export type Channel = 'direct' | 'stimulus' | 'webhook';

export interface Delivery {
  channel: Channel;
  /** The run's `input.n`: unique per delivery, so the runs of one delivery can be counted. */
  n: string;
  key?: string;
  /** 201/200 answered with the run's id, or 409 duplicate (the key was taken by an earlier attempt). */
  definite: boolean;
  runId?: string;
  attempts: number;
  lastError?: string;
  /** Every answer, in order (status, or the network error), for the report of a problem. */
  answers: string[];
}

export const WEBHOOK_SOURCE = 'chaos';
export const STIMULUS_SOURCE = 'chaos-api';
export const WORKFLOW = 'chaos-flow';

export class LoadDriver {
  readonly deliveries: Delivery[] = [];
  private inFlight = new Set<Promise<void>>();
  private seq = 0;

  constructor(
    private readonly cluster: ChaosCluster,
    private readonly o: { token: string; webhookSecret: string; pick: (n: number) => number; runId: string },
  ) {}

  /** Starts one delivery on a channel chosen by the seeded source; answers at once (the delivery runs on). */
  fire(): void {
    const channels: Channel[] = ['direct', 'stimulus', 'webhook'];
    const channel = channels[this.o.pick(3)]!;
    const i = this.seq++;
    const d: Delivery = { channel, n: `${this.o.runId}-${i}`, definite: false, attempts: 0, answers: [], ...(channel !== 'direct' ? { key: `key-${this.o.runId}-${i}` } : {}) };
    this.deliveries.push(d);
    const p = this.deliver(d).finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  private async deliver(d: Delivery): Promise<void> {
    const maxAttempts = d.channel === 'direct' ? 1 : 12;
    while (d.attempts < maxAttempts && !d.definite) {
      d.attempts++;
      const node = this.cluster.frontDoor(this.o.pick);
      if (!node) {
        d.lastError = 'no front door up';
        await new Promise((r) => setTimeout(r, 1000));
        if (d.channel === 'direct') d.attempts--; // not sent at all: try again later
        continue;
      }
      const base = `http://127.0.0.1:${node.spec.http}`;
      try {
        const res = await this.send(base, d);
        const text = await res.text();
        let body: Record<string, unknown> = {};
        try {
          body = JSON.parse(text) as Record<string, unknown>;
        } catch {
          // not JSON
        }
        d.answers.push(`${node.spec.id}: ${res.status}${res.status >= 300 ? ` ${text.slice(0, 120)}` : ''}`);
        if (res.status === 201 || res.status === 200) {
          d.definite = true;
          const id = (body.execution_id ?? body.workflow_execution_id) as string | undefined;
          if (id) d.runId = id;
          return;
        }
        if (res.status === 409 && body.error === 'idempotent_duplicate') {
          d.definite = true;
          return;
        }
        d.lastError = `${res.status} ${text.slice(0, 200)}`;
      } catch (err) {
        d.lastError = (err as Error).message;
        d.answers.push(`${node.spec.id}: ${d.lastError}`);
      }
      await new Promise((r) => setTimeout(r, Math.min(8000, 500 * 2 ** Math.min(d.attempts, 4))));
    }
  }

  private send(base: string, d: Delivery): Promise<Response> {
    const signal = AbortSignal.timeout(15_000);
    const auth = { authorization: `Bearer ${this.o.token}`, 'content-type': 'application/json' };
    if (d.channel === 'direct') {
      return fetch(`${base}/v1/workflows/${WORKFLOW}/run`, { method: 'POST', headers: auth, body: JSON.stringify({ input: { n: d.n } }), signal });
    }
    if (d.channel === 'stimulus') {
      return fetch(`${base}/v1/stimuli`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ source: STIMULUS_SOURCE, content: JSON.stringify({ n: d.n }), idempotency_key: d.key }),
        signal,
      });
    }
    const body = JSON.stringify({ n: d.n });
    return fetch(`${base}/v1/webhooks/${WEBHOOK_SOURCE}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-orch-signature': `sha256=${createHmac('sha256', this.o.webhookSecret).update(body).digest('hex')}`,
        'x-idempotency-key': d.key!,
      },
      body,
      signal,
    });
  }
}
