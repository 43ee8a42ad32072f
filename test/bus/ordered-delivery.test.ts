// The shared subscriber algorithm driven directly, with a history source whose timing the test controls.
import test from 'ava';
import type { BusEvent, HistorySource } from '../../src/bus/bus.ts';
import { OrderedDelivery } from '../../src/bus/ordered-delivery.ts';

const ev = (seq: number): BusEvent => ({ stream: 's', seq, type: 't', payload: { seq }, at: new Date(0).toISOString() });
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** History held in an array; `gate`, when set, holds every read until it resolves. */
class ArrayHistory implements HistorySource {
  events: BusEvent[] = [];
  gate: Promise<void> | undefined;
  reads: [number, number][] = [];

  async read(stream: string, fromSeq: number, limit: number): Promise<BusEvent[]> {
    this.reads.push([fromSeq, limit]);
    if (this.gate) await this.gate;
    return this.events.filter((e) => e.stream === stream && e.seq >= fromSeq).slice(0, limit);
  }
}

test('live events arriving during the history read wait for it, and overlap is delivered once', async (t) => {
  const history = new ArrayHistory();
  history.events = [1, 2, 3, 4].map(ev);
  let open!: () => void;
  history.gate = new Promise((r) => (open = r));
  const seen: number[] = [];
  const d = new OrderedDelivery('s', (e) => seen.push(e.seq), { fromSeq: 1, history });
  const started = d.start();
  d.push(ev(4));
  d.push(ev(5));
  d.push(ev(3));
  await sleep(10);
  t.deepEqual(seen, [], 'nothing before history');
  open();
  await started;
  await sleep(10);
  t.deepEqual(seen, [1, 2, 3, 4, 5]);
});

test('a gap is filled by a ranged history read, even if history catches up only a little later', async (t) => {
  const history = new ArrayHistory();
  const seen: number[] = [];
  const d = new OrderedDelivery('s', (e) => seen.push(e.seq), { history });
  await d.start();
  d.push(ev(1));
  d.push(ev(4));
  setTimeout(() => (history.events = [1, 2, 3, 4].map(ev)), 30);
  await sleep(300);
  t.deepEqual(seen, [1, 2, 3, 4]);
  t.deepEqual(history.reads[0], [2, 2], 'reads exactly the missing range');
});

test('events history never has are skipped after retries rather than blocking the stream forever', async (t) => {
  const history = new ArrayHistory();
  const seen: number[] = [];
  const d = new OrderedDelivery('s', (e) => seen.push(e.seq), { history });
  await d.start();
  d.push(ev(1));
  d.push(ev(3));
  await sleep(1500);
  t.deepEqual(seen, [1, 3]);
  d.push(ev(2));
  d.push(ev(4));
  await sleep(20);
  t.deepEqual(seen, [1, 3, 4], 'a late 2 is not delivered out of order');
});

test('history that starts after fromSeq (pruned) is delivered from where it starts', async (t) => {
  const history = new ArrayHistory();
  history.events = [5, 6].map(ev);
  const seen: number[] = [];
  const d = new OrderedDelivery('s', (e) => seen.push(e.seq), { fromSeq: 1, history });
  await d.start();
  t.deepEqual(seen, [5, 6]);
});

test('events of other streams are ignored; close stops delivery at once', async (t) => {
  const seen: number[] = [];
  const d = new OrderedDelivery('s', (e) => seen.push(e.seq));
  await d.start();
  d.push({ ...ev(1), stream: 'other' });
  d.push(ev(7));
  await sleep(10);
  d.close();
  d.push(ev(8));
  await sleep(10);
  t.deepEqual(seen, [7]);
});
