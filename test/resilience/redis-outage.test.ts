// The Redis bus through a Redis restart (issue 20, defect 1): a SUBSCRIBE made while Redis is down waits for it
// instead of failing after three retries (a rejected SUBSCRIBE killed a worker), a publish is queued, and an
// ordered subscription resumes after the restart with everything published meanwhile, history first, in order,
// each event once.
import test from 'ava';
import { RedisBus } from '../../src/bus/redis.ts';
import type { BusEvent, HistorySource } from '../../src/bus/bus.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { startPrivateRedis } from '../support/private-services.ts';
import { eventually } from '../support/node-process.ts';

/** The database's part: events are written here before they are published. */
class History implements HistorySource {
  readonly events = new Map<string, BusEvent[]>();

  append(stream: string, type: string): BusEvent {
    const list = this.events.get(stream) ?? [];
    const event: BusEvent = { stream, seq: list.length + 1, type, payload: {}, at: new Date().toISOString() };
    list.push(event);
    this.events.set(stream, list);
    return event;
  }

  async read(stream: string, fromSeq: number, limit: number): Promise<BusEvent[]> {
    return (this.events.get(stream) ?? []).filter((e) => e.seq >= fromSeq).slice(0, limit);
  }
}

test('a Redis restart: subscribe waits for it, a publish goes out after it, subscriptions resync from history, nothing is lost or repeated', async (t) => {
  const redis = await startPrivateRedis();
  t.teardown(() => redis.cleanup());
  const bus = await RedisBus.open(redis.url, { logger: silentLogger(), channelPrefix: `orch-test:resil:${Date.now()}:` });
  t.teardown(() => bus.close());
  const history = new History();
  const seen: number[] = [];
  await bus.subscribe('execution:a', (e) => seen.push(e.seq), { fromSeq: 1, history });
  await bus.publish(history.append('execution:a', 'one'));
  await bus.publish(history.append('execution:a', 'two'));
  await eventually(async () => (seen.length === 2 ? true : undefined), 30_000, 'the first two events');
  t.true(bus.isConnected());

  await redis.kill();
  await eventually(async () => (!bus.isConnected() ? true : undefined), 30_000, 'the bus to see Redis gone');
  // A subscription made during the outage (a worker receiving ForwardExecution) waits instead of failing.
  const lateSeen: number[] = [];
  history.append('execution:b', 'started');
  const late = bus.subscribe('execution:b', (e) => lateSeen.push(e.seq), { fromSeq: 1, history });
  let lateFailed: unknown;
  late.catch((err: unknown) => (lateFailed = err));
  // Published during the outage: one through this bus (queued; the call returns at once), one lost with another
  // node's connection.
  const queued = bus.publish(history.append('execution:a', 'three'));
  history.append('execution:a', 'terminal');
  // Longer than three retries took before (about 4 s in the issue).
  await new Promise((r) => setTimeout(r, 6_000));
  t.is(lateFailed, undefined, `subscribe failed during the outage: ${String(lateFailed)}`);

  await redis.start();
  await queued;
  await late;
  await eventually(async () => (seen.length >= 4 && lateSeen.length >= 1 ? true : undefined), 60_000, 'the events of the outage after the restart');
  t.deepEqual(seen, [1, 2, 3, 4]);
  t.deepEqual(lateSeen, [1]);
  // Live again after the restart.
  await bus.publish(history.append('execution:a', 'five'));
  await eventually(async () => (seen.length === 5 ? true : undefined), 30_000, 'a live event after the restart');
  t.deepEqual(seen, [1, 2, 3, 4, 5]);
  t.true(bus.isConnected());
});
