// The workflow engine under CockroachDB's rules (issue 17): every session SERIALIZABLE and SQLSTATE 40001 injected
// on a seeded fraction of statements (first, mid-transaction, at commit, standalone; test/support/faulty-db.ts),
// beneath the adapter's retry loops. Runs must complete as they do without faults, and nothing may be written
// twice: each run's event stream is exactly 1..n with the expected types, each state entered once, one approval
// row, one human input received.
import test from 'ava';
import type { Db } from '../../src/storage/db.ts';
import { openPg } from '../../src/storage/pg.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { describeFaults, faultSeed, faultyDb, serializableUrl, sumCounts, type FaultyDb } from '../support/faulty-db.ts';
import { manifest, startEngine, TENANT } from './engine-harness.ts';

const SEED = faultSeed(1717);
// everyPlace: the engine's writers batch a cohort of runs into one statement, so the whole file makes only a handful of
// transactions; each place is hit at its first chance as well as at random.
const PLAN = { first: 0.08, mid: 0.04, commit: 0.08, standalone: 0.04, everyPlace: true };
const opened: FaultyDb[] = [];

function faultyOpen(seed: number): (url: string) => Promise<Db> {
  return (url) =>
    openPg(serializableUrl(url), {
      logger: silentLogger(),
      inject: (raw) => {
        const f = faultyDb(raw, { ...PLAN, seed });
        opened.push(f);
        return f.db;
      },
    });
}

const CHAIN = manifest(
  'chain',
  'a',
  `    a:
      kind: System
      command: 'update_blackboard {"x": 1}'
      transitions: [{ target: b }]
    b:
      kind: System
      command: 'update_blackboard {"y": "{{blackboard.x}}-{{input.n}}"}'
      transitions: [{ target: c }]
    c:
      kind: System
      command: 'update_context {"phase": "done"}'
      transitions: [{ target: d }]
    d:
      kind: System
      command: 'update_blackboard {"phase": "{{workflow.context.phase}}"}'
      transitions: []
`,
);

const CHAIN_EVENTS = [
  'WorkflowExecutionStarted',
  ...['a', 'b', 'c', 'd'].flatMap(() => ['WorkflowStateEntered', 'WorkflowStateCompleted']),
  'WorkflowExecutionCompleted',
];

test('twelve concurrent runs of a four-state workflow complete; each event stream is exactly 1..n, nothing twice', async (t) => {
  const h = await startEngine(t, { openDb: faultyOpen(SEED) });
  await h.deploy(CHAIN);
  const ids = await Promise.all(Array.from({ length: 12 }, (_, n) => h.run('chain', { input: { n } })));
  t.is(new Set(ids).size, 12);
  for (const [n, id] of ids.entries()) {
    const row = await h.waitFor(id);
    t.is(row.status, 'completed', row.error ?? '');
    t.is(row.blackboard.y, `1-${n}`);
    t.is(row.blackboard.phase, 'done');
    t.is(row.total_transitions, 3);
    const events = await h.events(id);
    t.deepEqual(events.map((e) => e.type), CHAIN_EVENTS, `run ${n}`);
    t.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1));
  }
  const runs = await h.db.query<{ n: number }>('SELECT count(*)::INT4 AS n FROM workflow_executions');
  t.is(runs.rows[0]!.n, 12, 'no run was started twice');
});

test('a Human approval under faults: approved once, followed once', async (t) => {
  const h = await startEngine(t, { openDb: faultyOpen(SEED + 1) });
  await h.deploy(
    manifest(
      'gate',
      'gate',
      `    gate:
      kind: Human
      prompt: 'Deploy {{input.v}}?'
      transitions:
        - { condition: input_equals_yes, target: yes }
        - { condition: input_equals_no, target: no }
    yes:
      kind: System
      command: 'update_blackboard {"path": "yes", "fb": {{json human.feedback}} }'
      transitions: []
    no:
      kind: System
      command: 'update_blackboard {"path": "no"}'
      transitions: []
`,
    ),
  );
  const ids = await Promise.all(Array.from({ length: 4 }, (_, v) => h.run('gate', { input: { v } })));
  for (const id of ids) await h.waitFor(id, 'waiting_for_human_input');
  const { pending_requests } = await h.cap.approvals.list(TENANT);
  t.is(pending_requests.length, 4, 'one pending request per run');
  await Promise.all(pending_requests.map((r) => h.cap.approvals.approve(TENANT, r.id, { feedback: `ok ${r.execution_id}`, approved_by: 'bob' })));
  for (const id of ids) {
    const row = await h.waitFor(id);
    t.is(row.status, 'completed', row.error ?? '');
    t.is(row.blackboard.path, 'yes');
    t.is(row.blackboard.fb, `ok ${id}`);
    const types = (await h.events(id)).map((e) => e.type);
    t.is(types.filter((x) => x === 'WorkflowHumanInputReceived').length, 1);
    t.is(types.filter((x) => x === 'WorkflowExecutionCompleted').length, 1);
    const events = await h.events(id);
    t.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1));
  }
  const approvals = await h.db.query<{ n: number }>('SELECT count(*)::INT4 AS n FROM approvals');
  t.is(approvals.rows[0]!.n, 4);
});

test.after('faults were injected at every place, and none was swallowed', (t) => {
  const c = sumCounts(opened.map((f) => f.counts));
  t.log(`seed=${SEED} ${describeFaults(c)}`);
  t.true(c.first > 0 && c.mid > 0 && c.commit > 0 && c.standalone > 0, describeFaults(c));
  t.is(c.swallowed, 0);
});
