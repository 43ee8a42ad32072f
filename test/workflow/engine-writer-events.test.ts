// How the group-commit StepWriter inserts a batch's events, on real PostgreSQL: a batch of steps that carry no
// previous step's events inserts them plainly (no ON CONFLICT: a speculative insertion costs PostgreSQL about twice a
// plain one), and should one of them meet an event already written, the batch goes again with its events
// deduplicated, so that no step is ever recorded twice and the other runs of the batch commit as before.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db, QueryOptions, QueryResult, Row } from '../../src/storage/db.ts';
import { StepWriter } from '../../src/workflow/engine/writer.ts';
import { insertRuns, manifest, migratedPg, startEngine } from './engine-harness.ts';

interface Sent {
  name: string | undefined;
  sql: string;
  /** SQLSTATE of the statement's failure, if it failed. */
  failed?: string;
}

/** The database, with every step statement the writer sends (prepared as orch_workflow_steps*) recorded. */
function recording(db: Db): { db: Db; sent: Sent[] } {
  const sent: Sent[] = [];
  const wrapped = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop !== 'query') return Reflect.get(target, prop, receiver) as unknown;
      return async <R extends object = Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<R>> => {
        if (!options?.prepare?.startsWith('orch_workflow_steps')) return target.query<R>(sql, params, options);
        const s: Sent = { name: options.prepare, sql };
        sent.push(s);
        try {
          return await target.query<R>(sql, params, options);
        } catch (err) {
          s.failed = String((err as { code?: unknown }).code);
          throw err;
        }
      };
    },
  });
  return { db: wrapped, sent };
}

/** Run `id`'s first step (node-a holds it, epoch 0): state a entered. */
function firstStep(id: string): Parameters<StepWriter['write']>[0] {
  return {
    fence: { table: 'workflow_executions', keyColumn: 'id', key: id, nodeId: 'node-a', epoch: 0 },
    snapshot: { status: 'running', current_state: 'a', blackboard: { k: 1 }, context: {}, visits: { a: 1 }, total_transitions: 1, feedback: null, human_feedback: null, final_output: null, error: null },
    firstSeq: 2,
    transition: true,
    events: [
      { type: 'WorkflowStateEntered', key: 'entered:a:1', state_name: 'a', iteration_number: 1, payload: {} },
      { type: 'WorkflowStateCompleted', key: 'completed:a:1', state_name: 'a', iteration_number: 1, payload: {} },
    ],
  };
}

async function eventsOf(db: Db, id: string): Promise<{ seq: number; event_key: string }[]> {
  const res = await db.query<{ seq: number; event_key: string }>('SELECT seq, event_key FROM workflow_events WHERE execution_id = $1 ORDER BY seq', [id]);
  return res.rows;
}

test('a batch of steps inserts its events in one statement without a conflict arbiter', async (t) => {
  const base = await migratedPg(t);
  const { db, sent } = recording(base);
  const ids = [randomUUID(), randomUUID(), randomUUID()];
  await insertRuns(base, ids);
  const writer = new StepWriter(db, undefined, silentLogger(), { maxInFlight: 1 });
  await Promise.all(ids.map((id) => writer.write(firstStep(id))));
  t.deepEqual(writer.stats, { transactions: 1, steps: 3 });
  t.deepEqual(sent.map((s) => [s.name, s.failed]), [['orch_workflow_steps', undefined]]);
  t.notRegex(sent[0]!.sql, /ON CONFLICT/, 'the events of steps that carry none of a previous step are inserted plainly');
  for (const id of ids) t.deepEqual(await eventsOf(base, id), [{ seq: 1, event_key: 'started' }, { seq: 2, event_key: 'entered:a:1' }, { seq: 3, event_key: 'completed:a:1' }]);
});

test('an event already written fails the plain statement whole; the batch goes again deduplicated and every run commits', async (t) => {
  const base = await migratedPg(t);
  const { db, sent } = recording(base);
  const ids = [randomUUID(), randomUUID(), randomUUID()];
  await insertRuns(base, ids);
  // The second run already holds an event keyed as its step's first one (not something the engine writes: the
  // fallback is for what the argument in writer.ts might have missed).
  await base.query(
    `INSERT INTO workflow_events (execution_id, seq, type, event_key, payload) VALUES ($1, 90, 'WorkflowStateEntered', 'entered:a:1', '{}')`,
    [ids[1]],
  );
  const writer = new StepWriter(db, undefined, silentLogger(), { maxInFlight: 1 });
  const announced = await Promise.all(ids.map((id) => writer.write(firstStep(id))));
  t.deepEqual(
    sent.map((s) => [s.name, s.failed]),
    [
      ['orch_workflow_steps', '23505'],
      ['orch_workflow_steps_dedup', undefined],
    ],
  );
  t.regex(sent[1]!.sql, /ON CONFLICT DO NOTHING/);
  t.deepEqual(writer.stats, { transactions: 1, steps: 3 });
  t.is(announced.length, 3);
  // Nothing of the failed statement stayed; the deduplicated one wrote each run's step once.
  t.deepEqual(await eventsOf(base, ids[0]!), [{ seq: 1, event_key: 'started' }, { seq: 2, event_key: 'entered:a:1' }, { seq: 3, event_key: 'completed:a:1' }]);
  t.deepEqual(await eventsOf(base, ids[1]!), [{ seq: 1, event_key: 'started' }, { seq: 3, event_key: 'completed:a:1' }, { seq: 90, event_key: 'entered:a:1' }]);
  const rows = await base.query<{ last_seq: number }>('SELECT last_seq FROM workflow_executions WHERE id = ANY($1::UUID[])', [ids]);
  t.deepEqual(rows.rows.map((r) => r.last_seq), [3, 3, 3]);
});

test('runs through the engine, lone and concurrent, never need the deduplicating retry: no step statement fails', async (t) => {
  let rec!: ReturnType<typeof recording>;
  const h = await startEngine(t, { wrapDb: (db) => (rec = recording(db)).db });
  const states = Array.from({ length: 6 }, (_, i) => `    s${i}:\n      kind: System\n      command: 'update_blackboard {"v${i}": ${i}}'\n      transitions: ${i < 5 ? `[{ target: s${i + 1} }]` : '[]'}\n`).join('');
  await h.deploy(manifest('six', 's0', states));
  // A lone run (its built-in steps pipelined: the deduplicating statement), then 24 at once (batched: the plain one).
  const lone = await h.run('six');
  t.is((await h.waitFor(lone)).status, 'completed');
  const ids = await Promise.all(Array.from({ length: 24 }, () => h.run('six')));
  for (const id of ids) t.is((await h.waitFor(id, undefined, 30_000)).status, 'completed');
  t.deepEqual(rec.sent.filter((s) => s.failed), [], 'no step statement failed');
  t.true(rec.sent.some((s) => s.name === 'orch_workflow_steps'), 'batched steps went plainly');
  for (const id of [lone, ...ids]) {
    const events = await eventsOf(rec.db, id);
    t.deepEqual(events.map((e) => e.seq), Array.from({ length: 14 }, (_, i) => i + 1), 'every event once, no gap');
  }
});
