// One behaviour suite for EventBus, registered once per bus (memory.test.ts, redis.test.ts). Publishers do what
// real code does: write the event to event_log in a transaction, then publish it. Every stream name is random.
import test, { type ExecutionContext } from 'ava';
import { randomUUID } from 'node:crypto';
import type { BusEvent, EventBus, HistorySource } from '../../src/bus/bus.ts';
import type { Db } from '../../src/storage/db.ts';
import { appendEvent, DbHistorySource } from '../../src/storage/event-log.ts';

export interface BusFixture {
  /** Where events are published. */
  pub: EventBus;
  /** Where they are subscribed to: another connection (another node) when the bus has connections. */
  sub: EventBus;
  db: Db;
  close(): Promise<void>;
}

export interface BusAdapter {
  kind: EventBus['kind'];
  open(): Promise<BusFixture>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const newStream = (): string => `stream-${randomUUID()}`;
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Writes an event (committed) and answers it, unpublished. */
function record(db: Db, stream: string, i: number): Promise<BusEvent> {
  return db.tx((tx) => appendEvent(tx, stream, 'tick', { i }));
}

/** Collects delivered seqs; `until` resolves once `n` have arrived, then waits a little more to catch extras. */
function collector(): { seqs: number[]; onEvent: (e: BusEvent) => void; until(n: number, ms?: number): Promise<number[]> } {
  const seqs: number[] = [];
  return {
    seqs,
    onEvent: (e) => seqs.push(e.seq),
    async until(n, ms = 30_000) {
      const deadline = Date.now() + ms;
      while (seqs.length < n && Date.now() < deadline) await sleep(10);
      await sleep(100);
      return [...seqs];
    },
  };
}

export function busConformance(adapter: BusAdapter): void {
  const title = (s: string): string => `${adapter.kind}: ${s}`;
  let f: BusFixture;
  let history: HistorySource;

  test.before(async () => {
    f = await adapter.open();
    history = new DbHistorySource(f.db);
  });
  test.after.always(async () => {
    await f?.close();
  });

  const publishRange = async (stream: string, from: number, to: number): Promise<BusEvent[]> => {
    const events: BusEvent[] = [];
    for (let i = from; i <= to; i++) {
      const e = await record(f.db, stream, i);
      await f.pub.publish(e);
      events.push(e);
    }
    return events;
  };

  test(title('live subscriber gets every event in order, with its content'), async (t) => {
    t.is(f.pub.kind, adapter.kind);
    const stream = newStream();
    const got: BusEvent[] = [];
    const sub = await f.sub.subscribe(stream, (e) => got.push(e));
    t.teardown(() => sub.close());
    const sent = await publishRange(stream, 1, 50);
    const deadline = Date.now() + 30_000;
    while (got.length < 50 && Date.now() < deadline) await sleep(10);
    t.deepEqual(got, sent);
  });

  test(title('late subscriber: history, then live, no gap and no duplicate while a publisher keeps publishing'), async (t) => {
    const stream = newStream();
    const total = 300;
    let written = 0;
    const publisher = (async () => {
      for (let i = 1; i <= total; i++) {
        const e = await record(f.db, stream, i);
        written = i;
        // Vary the gap between commit and publish, so some events are committed before the subscriber reads
        // history but announced only after it subscribed.
        if (i % 7 === 0) await sleep(1);
        await f.pub.publish(e);
      }
    })();
    while (written < 100) await sleep(2);
    const c = collector();
    const sub = await f.sub.subscribe(stream, c.onEvent, { fromSeq: 1, history });
    t.teardown(() => sub.close());
    await publisher;
    t.deepEqual(await c.until(total), range(1, total));
  });

  test(title('several late subscribers joining at different moments each get the exact sequence'), async (t) => {
    const stream = newStream();
    const total = 150;
    const subs: { c: ReturnType<typeof collector>; from: number }[] = [];
    for (let i = 1; i <= total; i++) {
      const e = await record(f.db, stream, i);
      if (i % 40 === 0) {
        const c = collector();
        const from = i - 10;
        const s = await f.sub.subscribe(stream, c.onEvent, { fromSeq: from, history });
        t.teardown(() => s.close());
        subs.push({ c, from });
      }
      await f.pub.publish(e);
    }
    for (const { c, from } of subs) t.deepEqual(await c.until(total - from + 1), range(from, total), `from ${from}`);
  });

  test(title('fromSeq in the middle delivers from there on'), async (t) => {
    const stream = newStream();
    for (let i = 1; i <= 10; i++) await record(f.db, stream, i);
    const c = collector();
    const sub = await f.sub.subscribe(stream, c.onEvent, { fromSeq: 6, history });
    t.teardown(() => sub.close());
    t.deepEqual(c.seqs, [6, 7, 8, 9, 10], 'history is delivered by the time subscribe resolves');
    await publishRange(stream, 11, 12);
    t.deepEqual(await c.until(7), range(6, 12));
  });

  test(title('history longer than one page is delivered whole'), async (t) => {
    const stream = newStream();
    // One statement rather than 1234 appends in one long transaction, which concurrent tests would keep aborting.
    await f.db.query(
      `INSERT INTO event_log (stream, seq, type, payload, recorded_at)
       SELECT $1::TEXT, g, 'bulk', jsonb_build_object('i', g), now() FROM generate_series(1, 1234) AS g`,
      [stream],
    );
    const c = collector();
    const sub = await f.sub.subscribe(stream, c.onEvent, { fromSeq: 1, history });
    t.teardown(() => sub.close());
    t.deepEqual(c.seqs, range(1, 1234));
  });

  test(title('a gap in the live feed is filled from history; repeats are dropped'), async (t) => {
    const stream = newStream();
    const events: BusEvent[] = [];
    for (let i = 1; i <= 8; i++) events.push(await record(f.db, stream, i));
    const c = collector();
    const sub = await f.sub.subscribe(stream, c.onEvent, { history });
    t.teardown(() => sub.close());
    const [e1, e2, , , e5, e6, e7, e8] = events;
    // 3 and 4 never announced (a publisher died, or a disconnect ate them); 2 announced twice; 8 overtakes 7.
    for (const e of [e1, e2, e2, e5, e6, e8, e7, e6]) await f.pub.publish(e!);
    t.deepEqual(await c.until(8), range(1, 8));
  });

  test(title('without history, a live-only subscriber still drops repeats and stale events'), async (t) => {
    const stream = newStream();
    const events: BusEvent[] = [];
    for (let i = 1; i <= 4; i++) events.push(await record(f.db, stream, i));
    const c = collector();
    const sub = await f.sub.subscribe(stream, c.onEvent);
    t.teardown(() => sub.close());
    // The first event heard fixes where a live-only stream starts: 2 is heard alone first (on Redis, events that arrive
    // in one read are buffered together and the lowest goes first, so 2 and 1 together would start at 1).
    await f.pub.publish(events[1]!);
    t.deepEqual(await c.until(1), [2]);
    for (const e of [events[1], events[0], events[2], events[3]]) await f.pub.publish(e!);
    t.deepEqual(await c.until(3), [2, 3, 4]);
  });

  test(title('streams are independent and a subscription hears only its own'), async (t) => {
    const s1 = newStream();
    const s2 = newStream();
    const c1 = collector();
    const c2 = collector();
    const a = await f.sub.subscribe(s1, c1.onEvent, { history });
    const b = await f.sub.subscribe(s2, c2.onEvent, { history });
    t.teardown(async () => {
      await a.close();
      await b.close();
    });
    await publishRange(s1, 1, 3);
    await publishRange(s2, 1, 2);
    t.deepEqual(await c1.until(3), [1, 2, 3]);
    t.deepEqual(await c2.until(2), [1, 2]);
  });

  test(title('two subscriptions on one stream each get everything; closing one leaves the other'), async (t) => {
    const stream = newStream();
    const c1 = collector();
    const c2 = collector();
    const a = await f.sub.subscribe(stream, c1.onEvent, { history });
    const b = await f.sub.subscribe(stream, c2.onEvent, { history });
    t.teardown(() => b.close());
    await publishRange(stream, 1, 3);
    t.deepEqual(await c1.until(3), [1, 2, 3]);
    await a.close();
    await publishRange(stream, 4, 5);
    t.deepEqual(await c2.until(5), range(1, 5));
    t.deepEqual(c1.seqs, [1, 2, 3], 'nothing after close');
  });

  test(title('a handler that throws does not stop or reorder the stream'), async (t) => {
    const stream = newStream();
    const seen: number[] = [];
    const sub = await f.sub.subscribe(stream, (e) => {
      seen.push(e.seq);
      if (e.seq === 2) throw new Error('handler bug');
    });
    t.teardown(() => sub.close());
    await publishRange(stream, 1, 4);
    const deadline = Date.now() + 30_000;
    while (seen.length < 4 && Date.now() < deadline) await sleep(10);
    t.deepEqual(seen, [1, 2, 3, 4]);
  });

  test(title('subscribe fails when history cannot be read, and leaves nothing subscribed'), async (t) => {
    const stream = newStream();
    const broken: HistorySource = {
      read: async () => {
        throw new Error('database down');
      },
    };
    let called = 0;
    await t.throwsAsync(f.sub.subscribe(stream, () => called++, { fromSeq: 1, history: broken }), {
      message: 'database down',
    });
    await publishRange(stream, 1, 2);
    await sleep(100);
    t.is(called, 0);
    await t.throwsAsync(f.sub.subscribe(stream, () => undefined, { fromSeq: 1 }), { message: /history/ });
  });

  test(title('a closed subscription receives nothing more, even mid-history'), async (t: ExecutionContext) => {
    const stream = newStream();
    await publishRange(stream, 1, 2);
    const c = collector();
    const sub = await f.sub.subscribe(stream, c.onEvent, { fromSeq: 1, history });
    await sub.close();
    await publishRange(stream, 3, 4);
    await sleep(100);
    t.deepEqual(c.seqs, [1, 2]);
  });
}
