// FeedHub on its own (PostgreSQL, in-process bus): a resume point inside the ring replays exactly the messages after
// it; one older than the ring, from another feed, or ahead of the channel gets a snapshot marked reset; rows of
// another tenant never reach a channel; a burst of events on one entity coalesces into reads of its current row.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { MemoryBus } from '../../src/bus/memory.ts';
import { FeedHub } from '../../src/gateway/feed/hub.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg } from '../../src/storage/pg.ts';
import type { Db } from '../../src/storage/db.ts';
import { createTestDatabase } from '../support/pg.ts';

type Msg = Record<string, unknown> & { seq?: number; upsert?: { execution_id: string; iteration: number; tenant_id: string } };

async function insertExecution(db: Db, tenant: string, iteration = 0): Promise<string> {
  const id = randomUUID();
  await db.query(
    `INSERT INTO executions (id, tenant_id, agent_id, agent_name, agent_version, manifest, input, status, iteration)
     VALUES ($1, $2, $3, 'hub-agent', '1.0.0', '{}'::jsonb, 'x', 'running', $4)`,
    [id, tenant, randomUUID(), iteration],
  );
  return id;
}

async function until<T>(probe: () => T | undefined, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('ring resume, reset, tenant isolation and coalesced reads', async (t) => {
  const database = await createTestDatabase({ migrated: true });
  t.teardown(() => database.drop());
  const db = await openPg(database.url);
  t.teardown(() => db.close());
  await migrate(db);
  const bus = new MemoryBus();
  const hub = new FeedHub({ db, bus, nodes: { listNodes: async () => [] }, logger: silentLogger(), ringSize: 4 });
  t.teardown(() => hub.close());

  const id = await insertExecution(db, 'acme');
  const foreign = await insertExecution(db, 'other');
  const got: Msg[] = [];
  const sub = await hub.subscribe('acme', 'executions', (text) => got.push(JSON.parse(text) as Msg));
  t.like(got[0], { subscribed: 'executions', seq: 0, resumed: false });
  t.deepEqual((got[1]?.snapshot as { execution_id: string }[]).map((r) => r.execution_id), [id]);

  // Six changes, one after the other: six upserts numbered 1..6, each the row as it was read.
  let seq = 0;
  for (let i = 1; i <= 6; i++) {
    await db.query('UPDATE executions SET iteration = $2 WHERE id = $1', [id, i]);
    await bus.publish({ stream: `execution:${id}`, seq: ++seq, type: 'iteration_started', payload: {}, at: new Date().toISOString() });
    await until(() => (got.some((m) => m.upsert?.iteration === i) ? true : undefined));
  }
  // The other tenant's execution changes too: nothing of it reaches this channel.
  await bus.publish({ stream: `execution:${foreign}`, seq: 1, type: 'execution_started', payload: {}, at: new Date().toISOString() });
  await new Promise((r) => setTimeout(r, 200));
  const upserts = got.filter((m) => m.upsert);
  t.deepEqual(upserts.map((m) => m.seq), [1, 2, 3, 4, 5, 6]);
  t.deepEqual(upserts.map((m) => m.upsert!.iteration), [1, 2, 3, 4, 5, 6]);
  t.true(upserts.every((m) => m.upsert!.tenant_id === 'acme'));
  sub.close();

  // The ring holds seq 3..6: a resume from 2 replays exactly 3..6.
  const resumed: Msg[] = [];
  const r1 = await hub.subscribe('acme', 'executions', (text) => resumed.push(JSON.parse(text) as Msg), { feed: hub.feed, seq: 2 });
  t.true(r1.resumed);
  t.deepEqual(resumed.map((m) => m.seq), [2, 3, 4, 5, 6]);
  t.like(resumed[0], { subscribed: 'executions', resumed: true });
  t.deepEqual(resumed.slice(1), upserts.slice(2), 'the same messages');
  r1.close();

  // Older than the ring, another feed, or ahead of the channel: a fresh snapshot marked reset.
  for (const point of [{ feed: hub.feed, seq: 1 }, { feed: randomUUID(), seq: 6 }, { feed: hub.feed, seq: 9 }]) {
    const msgs: Msg[] = [];
    const r = await hub.subscribe('acme', 'executions', (text) => msgs.push(JSON.parse(text) as Msg), point);
    t.false(r.resumed, JSON.stringify(point));
    const snap = msgs.find((m) => 'snapshot' in m)!;
    t.like(snap, { seq: 6, reset: true });
    t.is((snap.snapshot as { iteration: number }[])[0]?.iteration, 6);
    r.close();
  }

  // A burst of 200 events on one execution: far fewer reads, and the last message carries the final row.
  const burst: Msg[] = [];
  const b = await hub.subscribe('acme', 'executions', (text) => burst.push(JSON.parse(text) as Msg));
  await db.query('UPDATE executions SET iteration = 99 WHERE id = $1', [id]);
  for (let i = 0; i < 200; i++) await bus.publish({ stream: `execution:${id}`, seq: ++seq, type: 'iteration_output', payload: {}, at: new Date().toISOString() });
  await until(() => (burst.some((m) => m.upsert?.iteration === 99) ? true : undefined));
  await new Promise((r) => setTimeout(r, 300));
  const reads = burst.filter((m) => m.upsert).length;
  t.true(reads >= 1 && reads < 20, `${reads} upserts for 200 events`);
  t.is(burst.filter((m) => m.upsert).at(-1)!.upsert!.iteration, 99);
  b.close();
  t.is(hub.subscriberCount(), 0);
});
