// Checks that a statement is index-driven on large tables, whatever plan the server makes of it. A statement is
// PREPAREd with its real parameters and EXPLAINed four ways: custom plan (the parameters' values known) and generic
// plan (what a prepared statement is planned as after a few runs), each with the default planner and with nested
// loops disabled — a stand-in for a planner that joins by hashing (CockroachDB's optimizer, or PostgreSQL's own with
// statistics from when the table was small): a statement that finds its rows only through a join to an unnest is
// index-driven only while the planner happens to pick a nested loop. Then it is run once under EXPLAIN ANALYZE (in a
// transaction rolled back) to count the rows it actually read from each large table.
import { createRequire } from 'node:module';
import pg from 'pg';

// pg's own conversion of a JS parameter to its text form (arrays to '{...}', objects to JSON, dates to ISO).
const pgUtils = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue(v: unknown): unknown };

export interface PlanProblem {
  mode: string;
  problem: string;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

function nodes(n: PlanNode, out: PlanNode[] = []): PlanNode[] {
  out.push(n);
  for (const c of n.Plans ?? []) nodes(c, out);
  return out;
}

function literal(c: pg.Client, v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  return c.escapeLiteral(String(pgUtils.prepareValue(v)));
}

/** The scans of `large` tables in a plan that read the table (or a whole full index) rather than the rows asked for. */
function wholeTableScans(root: PlanNode, large: ReadonlySet<string>, partialIndexes: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const n of nodes(root)) {
    const rel = n['Relation Name'];
    if (!rel || !large.has(rel) || n['Node Type'] === 'ModifyTable') continue;
    if (n['Node Type'] === 'Seq Scan') out.push(`Seq Scan on ${rel}`);
    else if ((n['Node Type'] === 'Index Scan' || n['Node Type'] === 'Index Only Scan') && !n['Index Cond'] && !partialIndexes.has(n['Index Name'] ?? '')) {
      out.push(`${n['Node Type']} of all of ${n['Index Name']} on ${rel}`);
    }
  }
  return out;
}

/** Rows each large table gave the statement's scans, rows removed by their filters included (EXPLAIN ANALYZE). */
function rowsRead(root: PlanNode, large: ReadonlySet<string>): Map<string, number> {
  const read = new Map<string, number>();
  for (const n of nodes(root)) {
    const rel = n['Relation Name'];
    if (!rel || !large.has(rel) || n['Node Type'] === 'ModifyTable') continue;
    const rows = ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) * (n['Actual Loops'] ?? 1);
    read.set(rel, (read.get(rel) ?? 0) + rows);
  }
  return read;
}

export interface PlanCheckOptions {
  large: ReadonlySet<string>;
  /** Most rows a statement may read from one large table (its own work, not the table's history). */
  maxRowsRead: number;
}

let counter = 0;

/** Problems of one statement (empty: index-driven in every mode, and it read few rows). */
export async function checkStatementPlans(c: pg.Client, sql: string, params: readonly unknown[], o: PlanCheckOptions): Promise<PlanProblem[]> {
  const partial = new Set((await c.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND indexdef LIKE '% WHERE %'`)).rows.map((r) => r.indexname));
  const name = `hot_${++counter}`;
  const args = params.length ? `(${params.map((v) => literal(c, v)).join(', ')})` : '';
  const problems: PlanProblem[] = [];
  await c.query(`PREPARE ${name} AS ${sql}`);
  try {
    for (const cache of ['force_custom_plan', 'force_generic_plan']) {
      for (const nestloop of ['on', 'off']) {
        const mode = `${cache === 'force_custom_plan' ? 'custom' : 'generic'} plan${nestloop === 'off' ? ', nested loops off' : ''}`;
        await c.query(`SET plan_cache_mode = ${cache}`);
        await c.query(`SET enable_nestloop = ${nestloop}`);
        const res = await c.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) EXECUTE ${name}${args}`);
        for (const p of wholeTableScans(res.rows[0]!['QUERY PLAN'][0]!.Plan, o.large, partial)) problems.push({ mode, problem: p });
      }
    }
    await c.query('RESET plan_cache_mode');
    await c.query('RESET enable_nestloop');
    await c.query('BEGIN');
    try {
      const res = await c.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${name}${args}`);
      for (const [rel, n] of rowsRead(res.rows[0]!['QUERY PLAN'][0]!.Plan, o.large)) {
        if (n > o.maxRowsRead) problems.push({ mode: 'EXPLAIN ANALYZE', problem: `read ${n} rows of ${rel}` });
      }
    } catch (err) {
      // An INSERT of a row the code path already inserted cannot run again (unique key): its plans were checked above.
      if ((err as { code?: string }).code !== '23505') throw err;
    } finally {
      await c.query('ROLLBACK');
    }
  } finally {
    await c.query('RESET ALL');
    await c.query(`DEALLOCATE ${name}`);
  }
  return problems;
}
