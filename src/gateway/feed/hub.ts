// FeedHub: the list-level streams of the live feed (`executions`, `workflows`, `approvals` per tenant, `nodes` for
// the cluster). One per node, shared by every WebSocket on it.
//
// Where changes come from: the event bus, by stream prefix (`execution:`, `workflow:`, `node:`), so an execution
// running on another controller shows up here through Redis. An event only says "entity X changed": the hub re-reads
// X's row (one read per entity at a time; events arriving meanwhile coalesce into one more read), so what it sends is
// the entity's current state and a lost or reordered bus message cannot leave a stale row behind for long. Nodes are
// also re-read on a timer, because heartbeats (load) are not announced.
//
// Sequence numbers: each (tenant, stream) channel numbers its messages 1, 2, 3... and keeps the last `ringSize` of
// them. A subscriber first gets a snapshot (the current rows) carrying the channel's seq at that moment, then every
// message after it. The channel is named by `feed` (this hub's id, new on every start): a client that reconnects with
// {feed, last_seq} to a hub that still has every message after last_seq gets exactly those (nothing missed, nothing
// twice); otherwise (another node, a restart, too far behind) it gets a fresh snapshot marked `reset`, which
// replaces what it had. Channels outlive their last subscriber by `retainMs` so short disconnects resume exactly.
//
// Memory is bounded: ring entries per channel, channels per tenant and stream, and the rows a snapshot reads.
import { randomUUID } from 'node:crypto';
import type { BusEvent, EventBus, Subscription } from '../../bus/bus.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Db } from '../../storage/db.ts';
import {
  readApprovalsOf,
  readExecution,
  readWorkflow,
  snapshotApprovals,
  snapshotExecutions,
  snapshotWorkflows,
} from './rows.ts';

export type ListStream = 'executions' | 'workflows' | 'approvals' | 'nodes';
export const LIST_STREAMS: readonly ListStream[] = ['executions', 'workflows', 'approvals', 'nodes'];

export interface NodeLister {
  listNodes(): Promise<Array<{ node_id: string } & Record<string, unknown>>>;
}

export interface FeedHubOptions {
  db: Db;
  bus: EventBus;
  nodes: NodeLister;
  logger: Logger;
  /** Messages kept per channel for exact resume. Default 2048. */
  ringSize?: number;
  /** How long a channel without subscribers is kept for resuming clients. Default 120 s. */
  retainMs?: number;
  /** Rows in a snapshot (most recent first, plus every non-terminal one). Default 1000. */
  snapshotLimit?: number;
  /** How often the nodes stream re-reads cluster_nodes while someone watches it. Default 2 s. */
  nodesPollMs?: number;
}

/** What a subscriber is handed: each message already serialized once for every socket. */
export type FeedSink = (text: string) => void;

export interface ResumePoint {
  feed: string;
  seq: number;
}

interface Sub {
  sink: FeedSink;
  /** Messages that arrived while the snapshot was being read; undefined once live. */
  buffer: Array<{ seq: number; text: string }> | undefined;
}

interface Channel {
  key: string;
  tenant: string;
  stream: ListStream;
  seq: number;
  ring: Array<{ seq: number; text: string }>;
  subs: Set<Sub>;
  idleSince: number | undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NODES_TENANT = '*';
/** A subscriber's snapshot-time buffer that grew past the ring: dropped, and the snapshot is read again. */
const OVERFLOWED: Array<{ seq: number; text: string }> = Object.freeze([]) as unknown as Array<{ seq: number; text: string }>;

export class FeedHub {
  /** Names this hub's numbering; a resume point from any other hub (or an earlier start) is not honoured. */
  readonly feed = randomUUID();
  private readonly channels = new Map<string, Channel>();
  private readonly busSubs = new Map<string, Promise<Subscription>>();
  /** Per entity: a read is running; `again` when another event came meanwhile. */
  private readonly inflight = new Map<string, { again: boolean }>();
  private readonly lastNodes = new Map<string, string>();
  private readonly ringSize: number;
  private readonly retainMs: number;
  private readonly snapshotLimit: number;
  private readonly nodesPollMs: number;
  private sweeper: NodeJS.Timeout | undefined;
  private nodesTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly log: Logger;

  constructor(private readonly o: FeedHubOptions) {
    this.ringSize = o.ringSize ?? 2048;
    this.retainMs = o.retainMs ?? 120_000;
    this.snapshotLimit = o.snapshotLimit ?? 1000;
    this.nodesPollMs = o.nodesPollMs ?? 2000;
    this.log = o.logger.child({ component: 'feed-hub' });
    this.sweeper = setInterval(() => this.sweep(), Math.max(1000, Math.min(this.retainMs, 30_000)));
    this.sweeper.unref();
  }

  /**
   * Subscribes `sink` to a list stream of `tenant`: a snapshot (or, with a resume point this hub can honour, the
   * missed messages) then live messages. Answers how it started and a close function.
   */
  async subscribe(tenant: string, stream: ListStream, sink: FeedSink, resume?: ResumePoint): Promise<{ resumed: boolean; close: () => void }> {
    await this.ensureBus(stream);
    const ch = this.channel(stream === 'nodes' ? NODES_TENANT : tenant, stream);
    const sub: Sub = { sink, buffer: undefined };
    const close = (): void => {
      ch.subs.delete(sub);
      if (ch.subs.size === 0) ch.idleSince = Date.now();
      if (stream === 'nodes') this.maybeStopNodesTimer();
    };
    if (resume && resume.feed === this.feed && resume.seq <= ch.seq && resume.seq >= (ch.ring[0]?.seq ?? ch.seq + 1) - 1) {
      // Synchronous from here to adding the subscriber: nothing can be numbered in between.
      sink(JSON.stringify({ subscribed: stream, feed: this.feed, seq: resume.seq, resumed: true }));
      for (const m of ch.ring) if (m.seq > resume.seq) sink(m.text);
      ch.subs.add(sub);
      ch.idleSince = undefined;
      if (stream === 'nodes') this.startNodesTimer();
      return { resumed: true, close };
    }
    sub.buffer = [];
    ch.subs.add(sub);
    ch.idleSince = undefined;
    if (stream === 'nodes') this.startNodesTimer();
    let at = ch.seq;
    let rows: unknown[];
    try {
      // The buffer is bounded: if more than a ring's worth arrives while the snapshot is read, read it again.
      for (let attempt = 0; ; attempt++) {
        rows = await this.snapshot(tenant, stream);
        if (sub.buffer !== OVERFLOWED) break;
        if (attempt >= 3) throw new Error(`the ${stream} stream changes faster than a snapshot can be read`);
        sub.buffer = [];
        at = ch.seq;
      }
    } catch (err) {
      close();
      throw err;
    }
    sink(JSON.stringify({ subscribed: stream, feed: this.feed, seq: at, resumed: false }));
    sink(JSON.stringify({ stream, feed: this.feed, seq: at, snapshot: rows, ...(resume ? { reset: true } : {}) }));
    const buffered = sub.buffer;
    sub.buffer = undefined;
    for (const m of buffered) if (m.seq > at) sink(m.text);
    return { resumed: false, close };
  }

  /** Subscribers across all channels (for metrics and tests). */
  subscriberCount(): number {
    let n = 0;
    for (const ch of this.channels.values()) n += ch.subs.size;
    return n;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    if (this.nodesTimer) clearInterval(this.nodesTimer);
    for (const p of this.busSubs.values()) await p.then((s) => s.close()).catch(() => undefined);
    this.busSubs.clear();
    this.channels.clear();
  }

  private channel(tenant: string, stream: ListStream): Channel {
    const key = `${tenant}\u0000${stream}`;
    let ch = this.channels.get(key);
    if (!ch) {
      ch = { key, tenant, stream, seq: 0, ring: [], subs: new Set(), idleSince: Date.now() };
      this.channels.set(key, ch);
    }
    return ch;
  }

  private hasChannels(stream: ListStream): boolean {
    for (const ch of this.channels.values()) if (ch.stream === stream) return true;
    return false;
  }

  /** Numbers a message on the channel (if anyone holds it), keeps it for resume and hands it to subscribers. */
  private emit(tenant: string, stream: ListStream, body: Record<string, unknown>): void {
    const ch = this.channels.get(`${tenant}\u0000${stream}`);
    if (!ch) return;
    ch.seq += 1;
    const text = JSON.stringify({ stream, feed: this.feed, seq: ch.seq, ...body });
    const m = { seq: ch.seq, text };
    ch.ring.push(m);
    if (ch.ring.length > this.ringSize) ch.ring.shift();
    for (const sub of ch.subs) {
      if (sub.buffer) {
        if (sub.buffer !== OVERFLOWED) sub.buffer.push(m);
        if (sub.buffer.length > this.ringSize) sub.buffer = OVERFLOWED;
        continue;
      }
      try {
        sub.sink(text);
      } catch (err) {
        this.log.warn({ err }, 'feed subscriber threw');
      }
    }
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, ch] of this.channels) {
      if (ch.subs.size === 0 && ch.idleSince !== undefined && now - ch.idleSince > this.retainMs) this.channels.delete(key);
    }
  }

  private async snapshot(tenant: string, stream: ListStream): Promise<unknown[]> {
    const db = this.o.db;
    switch (stream) {
      case 'executions':
        return snapshotExecutions(db, tenant, this.snapshotLimit);
      case 'workflows':
        return snapshotWorkflows(db, tenant, this.snapshotLimit);
      case 'approvals':
        return snapshotApprovals(db, tenant, this.snapshotLimit);
      case 'nodes':
        return this.o.nodes.listNodes();
    }
  }

  /** One bus subscription per prefix per node, taken when a stream is first asked for. */
  private ensureBus(stream: ListStream): Promise<unknown> {
    const prefix = stream === 'executions' ? 'execution:' : stream === 'nodes' ? 'node:' : 'workflow:';
    let p = this.busSubs.get(prefix);
    if (!p) {
      p = this.o.bus.subscribePrefix(prefix, (e) => this.onBusEvent(prefix, e));
      p.catch(() => this.busSubs.delete(prefix));
      this.busSubs.set(prefix, p);
    }
    return p;
  }

  private onBusEvent(prefix: string, event: BusEvent): void {
    if (this.closed) return;
    const id = event.stream.slice(prefix.length);
    if (prefix === 'node:') {
      this.refresh('nodes', '', () => this.pollNodes());
      return;
    }
    if (!UUID.test(id)) return;
    if (prefix === 'execution:') {
      if (this.hasChannels('executions')) this.refresh('execution', id, () => this.refreshExecution(id));
      return;
    }
    if (this.hasChannels('workflows')) this.refresh('workflow', id, () => this.refreshWorkflow(id));
    // Approvals change when a run starts or stops waiting for a human, and when it ends (a timed-out request).
    if (this.hasChannels('approvals') && /Human|Completed|Failed|Cancelled/.test(event.type)) {
      this.refresh('approvals', id, () => this.refreshApprovals(id));
    }
  }

  /** Runs `read` for the entity, at most one at a time; events meanwhile make it run once more afterwards. */
  private refresh(kind: string, id: string, read: () => Promise<void>): void {
    const key = `${kind}:${id}`;
    const running = this.inflight.get(key);
    if (running) {
      running.again = true;
      return;
    }
    const state = { again: false };
    this.inflight.set(key, state);
    const loop = async (): Promise<void> => {
      do {
        state.again = false;
        try {
          await read();
        } catch (err) {
          this.log.warn({ err, kind, id }, 'feed row read failed');
        }
      } while (state.again && !this.closed);
      this.inflight.delete(key);
    };
    // never-rejects: loop() catches every read failure and logs it.
    void loop();
  }

  private async refreshExecution(id: string): Promise<void> {
    const row = await readExecution(this.o.db, id);
    if (row) this.emit(row.tenant_id, 'executions', { upsert: row });
  }

  private async refreshWorkflow(id: string): Promise<void> {
    const row = await readWorkflow(this.o.db, id);
    if (row) this.emit(row.tenant_id, 'workflows', { upsert: row });
  }

  private async refreshApprovals(workflowId: string): Promise<void> {
    for (const a of await readApprovalsOf(this.o.db, workflowId)) {
      // A resolved request is sent once more as `remove`, so lists drop it; the tenant's channel sees nothing else.
      if (a.status === 'pending') this.emit(a.tenant_id, 'approvals', { upsert: a });
      else this.emit(a.tenant_id, 'approvals', { remove: a.id, status: a.status });
    }
  }

  private startNodesTimer(): void {
    if (this.nodesTimer || this.closed) return;
    this.nodesTimer = setInterval(() => this.refresh('nodes', '', () => this.pollNodes()), this.nodesPollMs);
    this.nodesTimer.unref();
  }

  private maybeStopNodesTimer(): void {
    const ch = this.channels.get(`${NODES_TENANT}\u0000nodes`);
    if (ch && ch.subs.size > 0) return;
    if (this.nodesTimer) clearInterval(this.nodesTimer);
    this.nodesTimer = undefined;
  }

  /** Re-reads the members and sends those whose row changed since the last read. */
  private async pollNodes(): Promise<void> {
    if (!this.channels.has(`${NODES_TENANT}\u0000nodes`)) return;
    const nodes = await this.o.nodes.listNodes();
    for (const n of nodes) {
      const text = JSON.stringify(n);
      if (this.lastNodes.get(n.node_id) === text) continue;
      this.lastNodes.set(n.node_id, text);
      this.emit(NODES_TENANT, 'nodes', { upsert: n });
    }
  }
}
