// The chaos suite's history checker: reads what the cluster recorded (the private database), the side effects the
// workflow left in its effects file and the model calls the scripted model saw, and judges them against what the
// load driver was told.
//
// - lost: a delivery answered with a start (or a duplicate: an earlier attempt started it) whose run does not exist;
// - stuck: a run not terminal at the end of the settle phase;
// - duplicated runs: more than one run for one delivery (one idempotency key);
// - history gaps / duplicates: a workflow or execution event stream whose seqs are not exactly 1..n, or a state
//   visit entered/completed twice (the workflow has no loops);
// - duplicated effects: a System state's shell effect seen twice for one run (at-least-once where a fault hit the
//   node running it; reported, documented, not a failure);
// - repeated model calls: the model asked more than once for one execution (reported; a call cut by a fault before
//   its answer was journaled is asked again by design).
import { readFile } from 'node:fs/promises';
import type { Db } from '../../src/storage/db.ts';
import type { Delivery } from './load.ts';
import { WORKFLOW } from './load.ts';

export interface ChaosVerdict {
  runs: number;
  deliveries: number;
  definite: number;
  undecided: number;
  lost: string[];
  stuck: string[];
  duplicatedRuns: string[];
  historyProblems: string[];
  duplicatedEffects: number;
  repeatedModelCalls: number;
  completed: number;
  failedRuns: number;
  /** Agent states that ended failed (their reasons, counted). */
  failedAgentStates: Record<string, number>;
  /** Per run, the longest time between two of its recorded events (ms): how long a fault held it up at worst. */
  longestStallMs: number[];
}

export async function judge(db: Db, deliveries: Delivery[], effectsFile: string, modelCalls: Map<string, number>): Promise<ChaosVerdict> {
  const runs = (
    await db.query<{ id: string; n: string | null; status: string; blackboard: { ask?: { status?: string; error?: string } } }>(
      `SELECT id::TEXT AS id, input->>'n' AS n, status, blackboard FROM workflow_executions WHERE workflow_name = $1`,
      [WORKFLOW],
    )
  ).rows;
  const byN = new Map<string, typeof runs>();
  for (const r of runs) if (r.n) byN.set(r.n, [...(byN.get(r.n) ?? []), r]);
  const byId = new Set(runs.map((r) => r.id));
  const v: ChaosVerdict = {
    runs: runs.length,
    deliveries: deliveries.length,
    definite: deliveries.filter((d) => d.definite).length,
    undecided: deliveries.filter((d) => !d.definite).length,
    lost: [],
    stuck: [],
    duplicatedRuns: [],
    historyProblems: [],
    duplicatedEffects: 0,
    repeatedModelCalls: 0,
    completed: runs.filter((r) => r.status === 'completed').length,
    failedRuns: runs.filter((r) => r.status === 'failed').length,
    failedAgentStates: {},
    longestStallMs: [],
  };
  for (const d of deliveries) {
    const mine = byN.get(d.n) ?? [];
    if (mine.length > 1) v.duplicatedRuns.push(`${d.channel} ${d.key ?? d.n}: ${mine.length} runs`);
    if (d.definite && mine.length === 0) v.lost.push(`${d.channel} ${d.key ?? d.n} (answered${d.runId ? ` ${d.runId}` : ''}) has no run`);
    if (d.runId && !byId.has(d.runId)) v.lost.push(`${d.channel} ${d.n}: run ${d.runId} was answered but is not recorded`);
  }
  for (const r of runs) {
    if (r.status === 'running' || r.status === 'waiting_for_human_input') v.stuck.push(`${r.id} (${r.n}) ${r.status}`);
    const ask = r.blackboard?.ask;
    if (ask?.status === 'failed') {
      const reason = (ask.error ?? 'unknown').replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>').slice(0, 80);
      v.failedAgentStates[reason] = (v.failedAgentStates[reason] ?? 0) + 1;
    }
  }
  // Event streams: seqs exactly 1..n; no state visit entered or completed twice.
  const gaps = await db.query<{ id: string; n: number; lo: number; hi: number }>(
    `SELECT e.execution_id::TEXT AS id, count(*)::INT4 AS n, min(seq) AS lo, max(seq) AS hi FROM workflow_events e
     JOIN workflow_executions w ON w.id = e.execution_id WHERE w.workflow_name = $1
     GROUP BY e.execution_id HAVING count(*) <> max(seq) OR min(seq) <> 1`,
    [WORKFLOW],
  );
  for (const g of gaps.rows) v.historyProblems.push(`workflow ${g.id}: ${g.n} events, seq ${g.lo}..${g.hi}`);
  const twice = await db.query<{ id: string; type: string; state: string; n: number }>(
    `SELECT e.execution_id::TEXT AS id, e.type, e.state_name AS state, count(*)::INT4 AS n FROM workflow_events e
     JOIN workflow_executions w ON w.id = e.execution_id WHERE w.workflow_name = $1
       AND e.type IN ('WorkflowStateEntered', 'WorkflowStateCompleted')
     GROUP BY e.execution_id, e.type, e.state_name HAVING count(*) > 1`,
    [WORKFLOW],
  );
  for (const r of twice.rows) v.historyProblems.push(`workflow ${r.id}: ${r.type} ${r.state} recorded ${r.n} times`);
  const execGaps = await db.query<{ id: string; n: number; lo: number; hi: number }>(
    `SELECT e.execution_id::TEXT AS id, count(*)::INT4 AS n, min(seq) AS lo, max(seq) AS hi FROM execution_events e
     JOIN executions x ON x.id = e.execution_id JOIN workflow_executions w ON w.id::TEXT = x.workflow_execution_id::TEXT
     WHERE w.workflow_name = $1 GROUP BY e.execution_id HAVING count(*) <> max(seq) OR min(seq) <> 1`,
    [WORKFLOW],
  );
  for (const g of execGaps.rows) v.historyProblems.push(`execution ${g.id}: ${g.n} events, seq ${g.lo}..${g.hi}`);
  const terminals = await db.query<{ id: string; n: number }>(
    `SELECT e.execution_id::TEXT AS id, count(*)::INT4 AS n FROM execution_events e
     JOIN executions x ON x.id = e.execution_id JOIN workflow_executions w ON w.id::TEXT = x.workflow_execution_id::TEXT
     WHERE w.workflow_name = $1 AND e.type IN ('execution_completed', 'execution_failed')
     GROUP BY e.execution_id HAVING count(*) > 1`,
    [WORKFLOW],
  );
  for (const r of terminals.rows) v.historyProblems.push(`execution ${r.id}: ${r.n} terminal events`);
  const stalls = await db.query<{ ms: number }>(
    `SELECT max(gap)::FLOAT8 AS ms FROM (
       SELECT e.execution_id, extract(epoch FROM e.recorded_at - lag(e.recorded_at) OVER (PARTITION BY e.execution_id ORDER BY e.seq)) * 1000 AS gap
       FROM workflow_events e JOIN workflow_executions w ON w.id = e.execution_id WHERE w.workflow_name = $1) g
     GROUP BY execution_id`,
    [WORKFLOW],
  );
  v.longestStallMs = stalls.rows.map((r) => Number(r.ms)).filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  // Side effects: one line per (run, state) the System state appended.
  const lines = (await readFile(effectsFile, 'utf8').catch(() => '')).split('\n').filter((l) => l.length > 0);
  const seen = new Map<string, number>();
  for (const l of lines) seen.set(l, (seen.get(l) ?? 0) + 1);
  for (const n of seen.values()) if (n > 1) v.duplicatedEffects += n - 1;
  for (const n of modelCalls.values()) if (n > 1) v.repeatedModelCalls += n - 1;
  return v;
}
