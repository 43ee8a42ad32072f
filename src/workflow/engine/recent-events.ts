// The events of the workflow runs started in this process, kept in memory for a short while (issue 16): a subscriber
// to a fresh run (the SSE stream or the live feed opened right after `POST run`) reads the run's history from here
// instead of a history query per subscriber. Filled when an event is published, which is after its commit (every
// publisher writes before it announces), so whatever this holds is committed. Only a complete prefix 1..N of a stream
// is served; anything else — a run started on another node, an event published out of order, a stream evicted or
// longer than the cap — is answered by the database, as before.
import type { BusEvent, EventBus } from '../../bus/bus.ts';
import { TERMINAL_WORKFLOW_EVENTS } from './events.ts';

export interface RecentEventsOptions {
  /** Streams held at most (the oldest is forgotten first). */
  maxStreams?: number;
  /** Events held per stream at most; a longer stream is forgotten (its later readers query the database). */
  maxEvents?: number;
  /** How long an ended run's events stay, ms (default KEEP_ENDED_MS). */
  keepEndedMs?: number;
}

/**
 * How long an ended run's events stay by default: long enough for the subscriber this is for (a stream opened right
 * after `POST run`, which a run of built-ins can outrun); a later one reads the database. Not longer: every event
 * kept outlives the young generation and is promoted, and at 30 s a busy node held the last 5,000 runs' events
 * (~110,000 objects) in the old generation (issue 16: at c = 64 over HTTP, 61 scavenges and a major GC per 2,000
 * runs at 25 ms each, against 49 and none with 2 s; docs/BENCHMARKS.md stop 36).
 */
export const KEEP_ENDED_MS = 2_000;

export class RecentWorkflowEvents {
  private readonly streams = new Map<string, BusEvent[]>();
  /** Streams that ended, oldest first, with when. */
  private readonly ended: { stream: string; at: number }[] = [];
  private readonly maxStreams: number;
  private readonly maxEvents: number;
  private readonly keepEndedMs: number;

  constructor(o: RecentEventsOptions = {}) {
    this.maxStreams = o.maxStreams ?? 5_000;
    this.maxEvents = o.maxEvents ?? 500;
    this.keepEndedMs = o.keepEndedMs ?? KEEP_ENDED_MS;
  }

  /** `bus`, with every workflow event published through it recorded first (before any subscriber can see it). */
  wrap(bus: EventBus): EventBus {
    return {
      kind: bus.kind,
      publish: (e) => {
        this.record(e);
        return bus.publish(e);
      },
      subscribe: (stream, onEvent, options) => bus.subscribe(stream, onEvent, options),
      subscribePrefix: (prefix, onEvent) => bus.subscribePrefix(prefix, onEvent),
      ...(bus.isConnected ? { isConnected: () => bus.isConnected?.() ?? true } : {}),
      close: () => bus.close(),
    };
  }

  record(e: BusEvent): void {
    if (!e.stream.startsWith('workflow:')) return;
    this.prune(Date.now());
    let list = this.streams.get(e.stream);
    if (list === undefined) {
      if (e.seq !== 1) return; // not seen from its start here: never complete
      if (this.streams.size >= this.maxStreams) this.streams.delete(this.streams.keys().next().value as string);
      list = [];
      this.streams.set(e.stream, list);
    }
    if (e.seq <= list.length) return; // a repeat
    if (e.seq !== list.length + 1 || list.length >= this.maxEvents) {
      this.streams.delete(e.stream); // a gap, or too long to keep: the database answers
      return;
    }
    list.push(e);
    if (TERMINAL_WORKFLOW_EVENTS.has(e.type)) this.ended.push({ stream: e.stream, at: Date.now() });
  }

  /**
   * Events fromSeq.. (at most `limit`) of a stream held whole from seq 1, as copies; undefined: ask the database.
   * Served only when the list is known to be everything published so far: the run ended (its terminal event is the
   * last one), or it is `live` in this process (the only writer while it holds the lease, publishing through here).
   */
  read(stream: string, fromSeq: number, limit: number, live: boolean): BusEvent[] | undefined {
    const list = this.streams.get(stream);
    if (list === undefined) return undefined;
    if (!live && !TERMINAL_WORKFLOW_EVENTS.has(list.at(-1)?.type ?? '')) return undefined;
    return structuredClone(list.slice(Math.max(0, fromSeq - 1), Math.max(0, fromSeq - 1) + limit));
  }

  get size(): number {
    return this.streams.size;
  }

  private prune(now: number): void {
    while (this.ended.length > 0 && now - (this.ended[0]?.at ?? now) >= this.keepEndedMs) {
      const gone = this.ended.shift();
      if (gone) this.streams.delete(gone.stream);
    }
  }
}
