// Issue 18: the parked-run safety net must cost what happened, not the number of runs parked. 100,000 runs parked
// on one node (one parked by the engine, the rest set-based copies of it, as bench/tell.ts writes them), ANALYZEd;
// then a few of them get an answer or a cancel with no message (as if the sender died right after its commit). The
// node's periodic scan finds exactly those (each run moves on), and every statement it sent is EXPLAINed with its
// real parameters (test/support/plan-check.ts): no plan may read the parked runs whole, and run once it may read only
// a few hundred rows. Before migration 105 the scan read every parked row of the node on every pass.
import test from 'ava';
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../src/storage/db.ts';
import { idFromVisit, visitKeyOf } from '../../src/workflow/engine/ids.ts';
import { checkStatementPlans } from '../support/plan-check.ts';
import { recordQueries, type QueryRecorder } from '../support/query-recorder.ts';
import { manifest, startEngine } from '../workflow/engine-harness.ts';

const PARKED = 100_000;

const GATE = manifest(
  'gate',
  'ask',
  `    ask:
      kind: Human
      prompt: 'Ship?'
      transitions: [{ target: done }]
    done:
      kind: System
      command: 'update_blackboard {"done": true}'
      transitions: []
`,
);

async function columnsOf(db: Queryable, table: string): Promise<string[]> {
  const r = await db.query<{ c: string }>(`SELECT column_name AS c FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position`, [table]);
  return r.rows.map((x) => x.c);
}

test('the parked-run scan reads what changed, not every parked run (100,000 parked)', async (t) => {
  t.timeout(600_000);
  let rec: QueryRecorder | undefined;
  const h = await startEngine(t, { parkAfterMs: 0, wrapDb: (db) => (rec = recordQueries(db)).db });
  await h.deploy(GATE);
  const template = await h.run('gate');
  for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 50))) {
    const r = await h.db.query<{ parked: boolean }>('SELECT parked FROM workflow_executions WHERE id = $1', [template]);
    if (r.rows[0]?.parked && !h.actors.isLive('workflow', template)) break;
    if (Date.now() > deadline) throw new Error('the template run did not park');
  }
  // Copies of the parked run: new ids, their approvals with the ids the engine derives.
  const wcols = await columnsOf(h.db, 'workflow_executions');
  const acols = await columnsOf(h.db, 'approvals');
  const wsel = wcols.map((c) => (c === 'id' ? 'v.id' : `t.${c}`)).join(', ');
  const asel = acols.map((c) => (c === 'id' ? 'v.aid' : c === 'workflow_execution_id' ? 'v.id' : `t.${c}`)).join(', ');
  const all: string[] = [];
  for (let done = 0; done < PARKED; done += 20_000) {
    const ids = Array.from({ length: 20_000 }, () => randomUUID());
    all.push(...ids);
    await h.db.query(
      `WITH v AS (SELECT * FROM unnest($1::UUID[], $2::UUID[]) AS v(id, aid)),
         w AS (INSERT INTO workflow_executions (${wcols.join(', ')}) SELECT ${wsel} FROM workflow_executions t, v WHERE t.id = $3 RETURNING 1)
       INSERT INTO approvals (${acols.join(', ')}) SELECT ${asel} FROM approvals t, v WHERE t.workflow_execution_id = $3`,
      [ids, ids.map((x) => idFromVisit(visitKeyOf(x, 'ask', 1), 'approval')), template],
    );
  }
  await h.db.query('ANALYZE workflow_executions');
  await h.db.query('ANALYZE approvals');

  // Three answers and a cancel, committed with no message to the node.
  const answered = [all[10]!, all[50_000]!, all[99_999]!];
  const cancelled = all[70_000]!;
  rec!.clear();
  await h.db.query(`UPDATE approvals SET status = 'approved', response = 'approved', resolved_by = 'bob', resolved_at = now() WHERE workflow_execution_id = ANY($1::UUID[])`, [answered]);
  await h.db.query('UPDATE workflow_executions SET cancel_requested = TRUE WHERE id = $1', [cancelled]);
  for (const id of answered) t.is((await h.waitFor(id)).status, 'completed');
  t.is((await h.waitFor(cancelled)).status, 'cancelled');
  t.is((await h.db.query('SELECT 1 FROM workflow_executions WHERE parked')).rowCount, PARKED - 3, 'the others stay parked (the template too)');

  const scans = rec!.statements().filter((s) => /\bparked\b/.test(s.sql) && /\bapprovals\b/.test(s.sql));
  t.true(scans.length > 0, 'the scan ran');
  const c = new pg.Client({ connectionString: h.url });
  await c.connect();
  t.teardown(() => c.end());
  const problems: string[] = [];
  for (const s of scans) {
    for (const p of await checkStatementPlans(c, s.sql, s.params, { large: new Set(['workflow_executions', 'approvals']), maxRowsRead: 500 })) {
      problems.push(`${p.mode}: ${p.problem} — ${s.sql.replace(/\s+/g, ' ').slice(0, 120)}`);
    }
  }
  t.deepEqual(problems, []);
});
