// A fresh run's stream costs no history query (issue 16): the events of runs started in this process are kept in
// memory (src/workflow/engine/recent-events.ts) and a new subscriber's first history page comes from there when the
// memory is known complete (the run ended, or it is live here); gaps, other nodes' runs and incomplete streams go to
// PostgreSQL as before. History reads are counted on a real database through the Queryable the history is given.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { MemoryBus } from '../../src/bus/memory.ts';
import type { BusEvent } from '../../src/bus/bus.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg } from '../../src/storage/pg.ts';
import type { Queryable } from '../../src/storage/db.ts';
import { WorkflowHistory, workflowStream } from '../../src/workflow/engine/events.ts';
import { KEEP_ENDED_MS, RecentWorkflowEvents } from '../../src/workflow/engine/recent-events.ts';
import { raceManifest } from '../../bench/workflow-race.ts';
import { createTestDatabase } from '../support/pg.ts';
import { startTestNode } from '../support/in-process-node.ts';

async function database(t: import('ava').ExecutionContext) {
  const d = await createTestDatabase({ migrated: true });
  const db = await openPg(d.url, { logger: silentLogger() });
  await migrate(db, silentLogger());
  t.teardown(async () => {
    await db.close();
    await d.drop();
  });
  let reads = 0;
  const counted: Queryable = {
    query: (sql: string, params?: unknown[]) => {
      if (/FROM workflow_events/.test(sql)) reads++;
      return db.query(sql, params as never);
    },
  } as Queryable;
  return { counted, reads: () => reads };
}

const ev = (id: string, seq: number, type = 'WorkflowStateEntered'): BusEvent => ({ stream: workflowStream(id), seq, type, payload: { n: seq }, at: new Date().toISOString() });

function collect(): { seen: number[]; on: (e: BusEvent) => void } {
  const seen: number[] = [];
  return { seen, on: (e) => seen.push(e.seq) };
}

test('a live run recorded from seq 1: a new subscriber gets its history from memory, then live events, each once', async (t) => {
  const { counted, reads } = await database(t);
  const recent = new RecentWorkflowEvents();
  const bus = recent.wrap(new MemoryBus());
  const id = randomUUID();
  const history = new WorkflowHistory(counted, recent, (x) => x === id);
  for (const s of [1, 2, 3]) await bus.publish(ev(id, s));
  const c = collect();
  const sub = await bus.subscribe(workflowStream(id), c.on, { fromSeq: 1, history });
  await bus.publish(ev(id, 3)); // a repeat: dropped
  await bus.publish(ev(id, 4));
  await bus.publish(ev(id, 5, 'WorkflowExecutionCompleted'));
  await new Promise((r) => setTimeout(r, 20));
  t.deepEqual(c.seen, [1, 2, 3, 4, 5]);
  t.is(reads(), 0, 'no history query');
  // From a later seq (an SSE client's Last-Event-ID): the rest only.
  const later = collect();
  const sub2 = await bus.subscribe(workflowStream(id), later.on, { fromSeq: 4, history });
  await new Promise((r) => setTimeout(r, 20));
  t.deepEqual(later.seen, [4, 5]);
  t.is(reads(), 0);
  await sub.close();
  await sub2.close();
});

test('memory is not trusted when it may be incomplete: another node\'s run, a gap, a run no longer live here', async (t) => {
  const { counted, reads } = await database(t);
  const recent = new RecentWorkflowEvents();
  const bus = recent.wrap(new MemoryBus());
  const live = new Set<string>();
  const history = new WorkflowHistory(counted, recent, (x) => live.has(x));
  // Never published here (held by another node): the database answers.
  await history.readStart(workflowStream(randomUUID()), 1, 500);
  t.is(reads(), 1);
  // Published here but not from seq 1 (taken over mid-run): the database.
  const moved = randomUUID();
  live.add(moved);
  await bus.publish(ev(moved, 7));
  await history.readStart(workflowStream(moved), 1, 500);
  t.is(reads(), 2);
  // A gap in what was published: forgotten, the database answers.
  const gappy = randomUUID();
  live.add(gappy);
  for (const s of [1, 2, 4]) await bus.publish(ev(gappy, s));
  await history.readStart(workflowStream(gappy), 1, 500);
  t.is(reads(), 3);
  // Recorded from 1, not ended, and no longer live here (its lease moved): the database.
  const away = randomUUID();
  for (const s of [1, 2]) await bus.publish(ev(away, s));
  await history.readStart(workflowStream(away), 1, 500);
  t.is(reads(), 4);
  // Once its terminal event is recorded the stream is complete wherever the run was: memory.
  await bus.publish(ev(away, 3, 'WorkflowExecutionFailed'));
  t.deepEqual((await history.readStart(workflowStream(away), 1, 500)).map((e) => e.seq), [1, 2, 3]);
  t.is(reads(), 4);
  // Gap fills and later pages always read the database.
  await history.read(workflowStream(away), 1, 500);
  t.is(reads(), 5);
});

test('bounded: the oldest stream is forgotten past maxStreams, an ended one after keepEndedMs, a long one past maxEvents', async (t) => {
  const recent = new RecentWorkflowEvents({ maxStreams: 2, maxEvents: 3, keepEndedMs: 50 });
  const [a, b, c, d] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  recent.record(ev(a, 1));
  recent.record(ev(b, 1));
  recent.record(ev(c, 1));
  t.is(recent.read(workflowStream(a), 1, 10, true), undefined);
  t.is(recent.read(workflowStream(c), 1, 10, true)?.length, 1);
  for (const s of [2, 3, 4]) recent.record(ev(c, s));
  t.is(recent.read(workflowStream(c), 1, 10, true), undefined, 'longer than maxEvents');
  recent.record(ev(d, 1));
  recent.record(ev(d, 2, 'WorkflowExecutionCompleted'));
  t.is(recent.read(workflowStream(d), 1, 10, false)?.length, 2);
  await new Promise((r) => setTimeout(r, 80));
  recent.record(ev(randomUUID(), 1)); // pruning happens on the next record
  t.is(recent.read(workflowStream(d), 1, 10, false), undefined, 'ended runs leave after keepEndedMs');
  // Copies: a reader cannot change what the next one reads.
  const e = randomUUID();
  recent.record(ev(e, 1));
  (recent.read(workflowStream(e), 1, 10, true)![0]!.payload as { n: number }).n = 99;
  t.deepEqual(recent.read(workflowStream(e), 1, 10, true)![0]!.payload, { n: 1 });
});

test('by default an ended run is kept KEEP_ENDED_MS (2 s), not longer: a later subscriber reads the database', async (t) => {
  t.is(KEEP_ENDED_MS, 2_000);
  const recent = new RecentWorkflowEvents();
  const a = randomUUID();
  recent.record(ev(a, 1));
  recent.record(ev(a, 2, 'WorkflowExecutionCompleted'));
  t.is(recent.read(workflowStream(a), 1, 10, false)?.length, 2, 'right after its end: from memory');
  await new Promise((r) => setTimeout(r, KEEP_ENDED_MS + 200));
  recent.record(ev(randomUUID(), 1)); // pruning happens on the next record
  t.is(recent.read(workflowStream(a), 1, 10, false), undefined, 'gone once KEEP_ENDED_MS passed');
});

test('on a real node the SSE stream of a run started here is the same as its logs from the database; errors stay JSON', async (t) => {
  const n = await startTestNode(t, { name: 'recent-sse' });
  const token = await n.token();
  t.is((await n.api('POST', '/v1/workflows', { manifest_yaml: raceManifest('sse') }, token)).status, 201);
  for (const prefer of ['wait=20', undefined]) {
    // Ended (run-and-wait), then fresh (a stream opened right after the start).
    const started = await n.api<{ execution_id: string }>('POST', '/v1/workflows/sse/run', {}, token, prefer ? { prefer } : {});
    const id = started.body.execution_id;
    const res = await fetch(`${n.http}/v1/workflows/executions/${id}/stream`, { headers: { authorization: `Bearer ${token}` } });
    t.is(res.status, 200);
    t.is(res.headers.get('content-type'), 'text/event-stream');
    const text = await res.text();
    const streamed = [...text.matchAll(/^id: (\d+)\nevent: (\w+)$/gm)].map((m) => `${m[1]} ${m[2]}`);
    const logs = await n.api<{ events: { event_type: string }[]; total: number }>('GET', `/v1/workflows/executions/${id}/logs?limit=200`, undefined, token);
    t.deepEqual(streamed, logs.body.events.map((e, i) => `${i + 1} ${e.event_type}`), prefer ?? 'fresh');
    t.is(streamed.at(-1), `${logs.body.total} WorkflowExecutionCompleted`);
  }
  const missing = await fetch(`${n.http}/v1/workflows/executions/${randomUUID()}/stream`, { headers: { authorization: `Bearer ${token}` } });
  t.is(missing.status, 404);
  t.deepEqual(await missing.json(), { error: 'Workflow execution not found' });
  const bad = await fetch(`${n.http}/v1/workflows/executions/nope/stream`, { headers: { authorization: `Bearer ${token}` } });
  t.is(bad.status, 400);
});
