// The subscriber side every EventBus shares: turns a live feed (which may drop, repeat or reorder events, and says
// nothing about what came before) plus a HistorySource into each sequence number delivered once, in order.
//
//   1. The bus subscribes to the live feed first; live events are buffered meanwhile (push()).
//   2. start() reads history from fromSeq and delivers it.
//   3. The buffer is drained, skipping seq <= last delivered (published before we joined but already in history).
//   4. Live events follow. One that arrives ahead of last+1 (a gap: lost while disconnected, overtaken by another
//      node's publish, or published before the subscription took) is held back until the missing range has been
//      read from history and delivered.
// This is correct because publishers write to the database before they publish: whatever is announced is already
// readable from history, and seq are gapless per stream, so an event at seq N means 1..N-1 are readable too.
import type { Logger } from '../logging/logger.ts';
import type { BusEvent, HistorySource } from './bus.ts';
import { recordBusLag } from '../observability/bus.ts';
import { backoffDelay } from '../util/backoff.ts';

const PAGE = 500;
const GAP_RETRIES = 5;

export interface OrderedDeliveryOptions {
  fromSeq?: number | undefined;
  history?: HistorySource | undefined;
  logger?: Logger | undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class OrderedDelivery {
  /** Highest seq delivered; undefined in live-only mode until the first event fixes where the stream starts. */
  private last: number | undefined;
  private readonly pending = new Map<number, BusEvent>();
  private pumping: Promise<void> | undefined;
  private started = false;
  private closed = false;
  /** Set by resync(): read history from last+1 before the next live event (the feed was interrupted). */
  private resyncWanted = false;

  constructor(
    private readonly stream: string,
    private readonly onEvent: (event: BusEvent) => void,
    private readonly options: OrderedDeliveryOptions = {},
  ) {
    if (options.fromSeq !== undefined) {
      if (!options.history) throw new Error('subscribe: fromSeq needs a history source');
      this.last = Math.max(0, options.fromSeq - 1);
    }
  }

  /** A live event arrived (from any bus). Safe to call before start(): it is buffered. */
  push(event: BusEvent): void {
    if (this.closed || event.stream !== this.stream) return;
    recordBusLag(event);
    if (this.last !== undefined && event.seq <= this.last) return;
    this.pending.set(event.seq, event);
    if (this.started) this.kick();
  }

  /** Call once the live subscription is in place: delivers history, then whatever was buffered. */
  async start(): Promise<void> {
    // Live events keep being buffered (not pumped) until history is delivered, so only one reader advances `last`.
    if (this.options.fromSeq !== undefined) await this.catchUp(true);
    this.started = true;
    this.kick();
    await this.pumping;
  }

  close(): void {
    this.closed = true;
    this.pending.clear();
  }

  /**
   * The live feed was interrupted (the bus reconnected after an outage): whatever was published meanwhile is read
   * from history now, instead of waiting for a later event to reveal the gap (there may be none: a terminal event
   * published during the outage would otherwise never arrive). Live-only subscriptions have nothing to read.
   */
  resync(): void {
    if (this.closed || !this.options.history || this.last === undefined) return;
    this.resyncWanted = true;
    if (this.started) this.kick();
  }

  private kick(): void {
    if (this.pumping || this.closed) return;
    // Started on a microtask so that a bus which pushes synchronously from publish() never runs handlers inside it.
    this.pumping = Promise.resolve()
      .then(() => this.pump())
      .catch((err: unknown) => this.options.logger?.error({ err, stream: this.stream }, 'event delivery failed'))
      .finally(() => {
        this.pumping = undefined;
        // Events pushed while the last pass was finishing.
        if (this.hasDeliverable()) this.kick();
      });
  }

  private hasDeliverable(): boolean {
    return !this.closed && (this.pending.size > 0 || this.resyncWanted);
  }

  private async pump(): Promise<void> {
    for (let failures = 0; this.resyncWanted && !this.closed; ) {
      this.resyncWanted = false;
      try {
        await this.catchUp();
      } catch (err) {
        // History lives in the database, which may be down as well: wait it out, the feed stays held meanwhile.
        this.resyncWanted = true;
        failures++;
        this.options.logger?.warn({ err, stream: this.stream, attempt: failures }, 'history read failed while resyncing');
        await sleep(backoffDelay(failures));
      }
    }
    while (!this.closed) {
      const next = this.nextPending();
      if (!next) return;
      if (this.last === undefined || next.seq === this.last + 1) {
        this.pending.delete(next.seq);
        this.deliver(next);
        continue;
      }
      await this.fillGap(next.seq);
    }
  }

  /** The lowest buffered event above last, after dropping what is already delivered. */
  private nextPending(): BusEvent | undefined {
    let min: BusEvent | undefined;
    for (const [seq, event] of this.pending) {
      if (this.last !== undefined && seq <= this.last) this.pending.delete(seq);
      else if (!min || seq < min.seq) min = event;
    }
    return min;
  }

  /** Reads last+1 .. upTo-1 from history. Without history, or if history never shows them, moves past the gap. */
  private async fillGap(upTo: number): Promise<void> {
    const from = this.last! + 1;
    const history = this.options.history;
    if (history) {
      for (let attempt = 0; attempt < GAP_RETRIES && !this.closed; attempt++) {
        try {
          for (const event of await history.read(this.stream, this.last! + 1, upTo - 1 - this.last!)) {
            if (event.seq === this.last! + 1 && event.seq < upTo) this.deliver(event);
          }
        } catch (err) {
          this.options.logger?.warn({ err, stream: this.stream }, 'history read failed while filling a gap');
        }
        if (this.last! + 1 >= upTo || this.pending.has(this.last! + 1)) return;
        await sleep(20 * 2 ** attempt);
      }
    }
    if (this.closed) return;
    this.options.logger?.warn({ stream: this.stream, from, to: upTo - 1 }, 'events missing from history; skipping them');
    this.last = upTo - 1;
  }

  /** Reads everything from last+1 in pages. A failure here is the subscriber's: subscribe() rejects. */
  private async catchUp(first = false): Promise<void> {
    const history = this.options.history!;
    for (let start = first; !this.closed; start = false) {
      const page = await (start && history.readStart ? history.readStart(this.stream, this.last! + 1, PAGE) : history.read(this.stream, this.last! + 1, PAGE));
      for (const event of page) {
        if (event.seq <= this.last!) continue;
        if (event.seq > this.last! + 1) {
          // History itself starts later (older events pruned): nothing can fill this, so start where it starts.
          this.options.logger?.warn({ stream: this.stream, from: this.last! + 1, to: event.seq - 1 }, 'history has a gap');
          this.last = event.seq - 1;
        }
        this.deliver(event);
      }
      if (page.length < PAGE) return;
    }
  }

  private deliver(event: BusEvent): void {
    if (this.closed) return;
    this.last = event.seq;
    try {
      this.onEvent(event);
    } catch (err) {
      // A throwing handler must not stop the stream or make it skip or repeat events.
      this.options.logger?.error({ err, stream: this.stream, seq: event.seq }, 'event handler threw');
    }
  }
}
