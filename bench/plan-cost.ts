// Per-batch cost of the step writer's prepared statement by plan cache mode (issue 23), in-process: one connection,
// a private PostgreSQL (pg_stat_statements with track_planning) whose workflow_executions holds 100,000 terminal runs
// and 16 live ones; the StepWriter writes `steps` runs' steps per batch (two events each), `batches` times per mode.
// Server-side figures from pg_stat_statements (execution and planning per call, times planned), plus the wall time per
// batch as this process sees it (round trip included: on a loaded machine mostly waiting). The three plan_cache_mode
// rows run the statement on the main pool's connection (SET per mode); the last row, "generic-plan lane", is what the
// writer does now: its statement on the pg adapter's lane (src/storage/pg.ts), the main pool left on `auto`.
//
//   npm run bench -- plan-cost [--steps 4] [--batches 300]
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import { silentLogger } from '../src/logging/logger.ts';
import { migrate } from '../src/storage/migrate.ts';
import type { Db } from '../src/storage/db.ts';
import { openPg } from '../src/storage/pg.ts';
import { StepWriter, type RunSnapshot } from '../src/workflow/engine/writer.ts';
import { startPrivatePg } from './private-pg.ts';

export interface PlanCost {
  mode: string;
  calls: number;
  plans: number;
  execMs: number;
  planPerCallMs: number;
  wallMs: number;
  load: number;
}

const MODES = ['force_custom_plan', 'auto', 'force_generic_plan', 'generic-plan lane'] as const;

/** The Db with QueryOptions.genericPlan dropped: every statement on the main pool, as before the lane. */
function mainPoolOnly(db: Db): Db {
  return { kind: db.kind, query: (sql, params, options) => db.query(sql, params, { ...options, genericPlan: false }), tx: (fn) => db.tx(fn), ping: () => db.ping(), close: () => db.close() };
}

export async function benchPlanCost(steps: number, batches: number, out: (line: string) => void): Promise<PlanCost[]> {
  const server = await startPrivatePg({ 'pg_stat_statements.track_planning': 'on' });
  const url = await server.createDatabase('plancost');
  const db = await openPg(url, { logger: silentLogger(), poolSize: 1, plans: false });
  const admin = new pg.Client({ connectionString: url });
  const results: PlanCost[] = [];
  try {
    await admin.connect();
    await migrate(db, silentLogger());
    await db.query(`INSERT INTO workflow_executions (id, tenant_id, workflow_id, workflow_name, workflow_version, manifest, input, status, current_state,
         blackboard, context, visits, ancestry, completed_at)
       SELECT md5('r' || g)::UUID, 't', 'w', 'w', '1', '{}', '{}', 'completed', 's9', '{}', '{}', '{}', '[]', now() FROM generate_series(1, 100000) g`);
    const ids = Array.from({ length: 16 }, () => randomUUID());
    for (const id of ids) {
      await db.query(
        `INSERT INTO workflow_executions (id, tenant_id, workflow_id, workflow_name, workflow_version, manifest, input, status, current_state,
           blackboard, context, visits, ancestry, owner_node, epoch) VALUES ($1, 't', 'w', 'w', '1', '{}', '{}', 'running', 's0', '{}', '{}', '{}', '[]', 'node-a', 1)`,
        [id],
      );
    }
    await db.query('VACUUM ANALYZE workflow_executions');
    const writers = {
      main: new StepWriter(mainPoolOnly(db), undefined, silentLogger(), { maxInFlight: 1 }),
      lane: new StepWriter(db, undefined, silentLogger(), { maxInFlight: 1 }),
    };
    let writer = writers.main;
    const snap: RunSnapshot = { status: 'running', current_state: 's1', blackboard: {}, context: {}, visits: {}, total_transitions: 1, feedback: null, human_feedback: null, final_output: null, error: null };
    let seq = 1;
    const batch = (): Promise<unknown> => {
      const i = seq++;
      return Promise.all(
        ids.slice(0, steps).map((id) =>
          writer.write({
            fence: { table: 'workflow_executions', keyColumn: 'id', key: id, nodeId: 'node-a', epoch: 1 },
            snapshot: { ...snap, total_transitions: i },
            firstSeq: 2 * i,
            transition: true,
            events: [
              { type: 'WorkflowStateEntered', key: `entered:${i}`, state_name: 's1', iteration_number: i, payload: {} },
              { type: 'WorkflowStateEntered', key: `again:${i}`, state_name: 's1', iteration_number: i, payload: {} },
            ],
          }),
        ),
      );
    };
    for (const mode of MODES) {
      if (mode === 'generic-plan lane') {
        await db.query('RESET plan_cache_mode');
        writer = writers.lane;
      } else {
        await db.query(`SET plan_cache_mode = ${mode}`);
      }
      await db.query('DISCARD PLANS');
      for (let k = 0; k < 10; k++) await batch();
      await admin.query('SELECT pg_stat_statements_reset()');
      const t0 = performance.now();
      for (let k = 0; k < batches; k++) await batch();
      const wallMs = (performance.now() - t0) / batches;
      const s = (
        await admin.query<{ calls: string; plans: string; exec: number; plan: number }>(
          `SELECT calls::TEXT, plans::TEXT, mean_exec_time AS exec, total_plan_time / GREATEST(calls, 1) AS plan
           FROM pg_stat_statements WHERE query LIKE 'WITH v AS (SELECT * FROM unnest(%' AND query LIKE '%INSERT INTO workflow_events%'`,
        )
      ).rows[0];
      const r: PlanCost = { mode, calls: Number(s?.calls ?? 0), plans: Number(s?.plans ?? 0), execMs: s?.exec ?? 0, planPerCallMs: s?.plan ?? 0, wallMs, load: os.loadavg()[0] ?? 0 };
      results.push(r);
      out(`${mode}: ${r.calls} calls, planned ${r.plans} times, execution ${r.execMs.toFixed(3)} ms + planning ${r.planPerCallMs.toFixed(3)} ms per call (server); ${r.wallMs.toFixed(2)} ms per batch of ${steps} steps in this process; load ${r.load.toFixed(1)}`);
    }
    return results;
  } finally {
    await admin.end().catch(() => undefined);
    await db.close();
    await server.close();
  }
}
