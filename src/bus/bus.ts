// Live fan-out of events between components and nodes. Events belong to a stream ("execution:<id>",
// "workflow:<id>", "nodes", ...) and carry that stream's sequence number, assigned when the event was written to
// the database (the database is the truth; the bus only announces).

export interface BusEvent<P = unknown> {
  stream: string;
  /** 1-based, strictly increasing per stream, no gaps in what was written. */
  seq: number;
  type: string;
  payload: P;
  /** ISO 8601 time the event was recorded. */
  at: string;
}

/** Where a late subscriber reads what was published before it joined (normally the database). */
export interface HistorySource {
  /** Events of `stream` with seq >= fromSeq, ascending, at most `limit` of them. */
  read(stream: string, fromSeq: number, limit: number): Promise<BusEvent[]>;
  /**
   * As read, for the first page of a new subscription only (its live feed is already in place), so a source may
   * answer it from memory it knows to be complete up to what was published; gap fills and later pages use read.
   */
  readStart?(stream: string, fromSeq: number, limit: number): Promise<BusEvent[]>;
}

export interface Subscription {
  close(): Promise<void>;
}

export interface SubscribeOptions {
  /** Deliver history from this sequence number (inclusive) before live events; omit for live only. */
  fromSeq?: number;
  /** Needed when fromSeq is given, and used to fill a gap seen in the live feed. */
  history?: HistorySource;
}

export interface EventBus {
  readonly kind: 'memory' | 'redis';
  publish(event: BusEvent): Promise<void>;
  /**
   * Calls `onEvent` for each event of `stream` in sequence order, each sequence number exactly once: history from
   * `fromSeq`, then live, with no gap and no duplicate between the two.
   */
  subscribe(stream: string, onEvent: (event: BusEvent) => void, options?: SubscribeOptions): Promise<Subscription>;
  /**
   * Every live event whose stream starts with `prefix` ("execution:", "workflow:", "node:"), from every node, as it
   * arrives: no history, no ordering or exactly-once repair (list views that re-read the row on each event).
   */
  subscribePrefix(prefix: string, onEvent: (event: BusEvent) => void): Promise<Subscription>;
  /** False while the bus cannot reach its server (readiness); a bus with no server leaves it out. */
  isConnected?(): boolean;
  close(): Promise<void>;
}
