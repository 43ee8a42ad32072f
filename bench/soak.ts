// The soak (issue 23): does a node's cost grow with its history? One `orch up` process on PostgreSQL (a private server
// started for the bench, with pg_stat_statements), C clients (default 16) each running the race's 10-step workflow
// through the public API in a loop: `POST /v1/workflows/race/run` with the node's bearer token, then
// `GET /v1/workflows/executions/:id/stream` (SSE) until the terminal event. Optionally N terminal runs (with their
// events) are preloaded first, as a long-lived database would hold. Per minute: runs completed, runs/s, p50/p99 of a
// run (POST to terminal event), the node's RSS, the load average. At the end: the costliest statements
// (pg_stat_statements) and the hot tables' scans and HOT-update ratio (pg_stat_user_tables).
//
//   npm run bench -- soak [--minutes 10] [--clients 16] [--preload 0] [--orch-root DIR]
//
// --orch-root runs another checkout's bin/orch.js (e.g. an export of an older main, with node_modules linked), so the
// same load can be compared across commits.
import { readFile, writeFile, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startOrchNode, type NodeProcess } from '../test/support/node-process.ts';
import { createTestDatabase } from '../test/support/pg.ts';
import { startPrivatePg } from './private-pg.ts';
import { BackendCpu, cpuSeconds } from './proc-cpu.ts';
import { percentile } from './stats.ts';
import { raceManifest, STEPS } from './workflow-race.ts';

export interface SoakOptions {
  minutes: number;
  clients: number;
  preload: number;
  orchRoot?: string | undefined;
  /** On the shared server (DATABASE_URL or 127.0.0.1:5432, a throwaway database) instead of a private one: as
   * the issue measured it; no pg_stat_statements there. */
  sharedPg?: boolean;
  /** Settings of the private server (`-c name=value`), e.g. autovacuum=off to see plans made without fresh statistics. */
  pgSettings?: Record<string, string>;
}

export interface SoakMinute {
  minute: number;
  runs: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  rssMb: number;
  load: number;
  /** Sequential scans of the two large tables (workflow_executions + workflow_events) in the minute, and the tuples they read. */
  seqScans: number;
  seqTuples: number;
  /** CPU per completed run in the minute: the node process, and PostgreSQL's backends of the bench database (autovacuum
   * workers included). Unlike runs/s these do not fall when other work takes the machine's cores. */
  nodeCpuMsPerRun: number;
  pgCpuMsPerRun: number;
}

/** Sequential scans so far on the tables that grow with history (pg_stat_user_tables, cumulative since the reset). */
async function largeTableSeqScans(c: pg.Client): Promise<{ scans: number; tuples: number }> {
  const r = (await c.query<{ scans: string; tuples: string }>(
    `SELECT COALESCE(sum(seq_scan), 0)::TEXT AS scans, COALESCE(sum(seq_tup_read), 0)::TEXT AS tuples FROM pg_stat_user_tables
     WHERE relname IN ('workflow_executions', 'workflow_events')`,
  )).rows[0];
  return { scans: Number(r?.scans ?? 0), tuples: Number(r?.tuples ?? 0) };
}

const TERMINAL = /^event: (WorkflowExecutionCompleted|WorkflowExecutionFailed|WorkflowExecutionCancelled)$/m;

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/** One run through the public API: start it, follow its SSE stream to the terminal event. */
async function oneRun(base: string, token: string): Promise<void> {
  const res = await fetch(`${base}/v1/workflows/race/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{}',
  });
  const body = (await res.json()) as { execution_id?: string };
  if (res.status !== 201 || !body.execution_id) throw new Error(`run answered ${res.status} ${JSON.stringify(body)}`);
  const stream = await fetch(`${base}/v1/workflows/executions/${body.execution_id}/stream`, { headers: { authorization: `Bearer ${token}` } });
  if (!stream.ok || !stream.body) throw new Error(`stream answered ${stream.status}`);
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of stream.body as unknown as AsyncIterable<Uint8Array>) {
    text += decoder.decode(chunk, { stream: true });
    const m = TERMINAL.exec(text);
    if (m) {
      if (m[1] !== 'WorkflowExecutionCompleted') throw new Error(`run ${body.execution_id} ended ${m[1]}`);
      return;
    }
  }
  throw new Error(`stream of ${body.execution_id} ended without a terminal event`);
}

/** The tables the preload fills, and whose indexes it builds after the load instead of maintaining them row by row. */
const PRELOADED = ['workflow_executions', 'workflow_events'];

/**
 * N terminal runs with their events, copied from a real run of the race workflow the node has just completed (its
 * row and its 22 events, payloads and keys as the engine wrote them), each with a fresh random id and its own time
 * (one run a second back from now). Set-based: one INSERT ... SELECT generate_series per chunk of runs and one for
 * their events. The two tables' indexes and primary/unique keys are dropped first and built again at the end (a
 * sorted build: inserting 22 M random-keyed index entries one by one into indexes many times larger than the shared
 * server's 128 MB of buffers was what made the previous preload slow down as it went), then VACUUM ANALYZE, as a
 * long-lived database would be. Runs without a session commit wait (synchronous_commit off: a crash loses the
 * preload, nothing else).
 */
async function preload(c: pg.Client, n: number, out: (line: string) => void): Promise<void> {
  const t0 = Date.now();
  const secs = (): number => Math.round((Date.now() - t0) / 1000);
  await c.query("SET synchronous_commit = off; SET maintenance_work_mem = '256MB'");
  const proto = (await c.query<{ id: string }>(`SELECT id FROM workflow_executions WHERE status = 'completed' ORDER BY completed_at LIMIT 1`)).rows[0];
  if (!proto) throw new Error('no completed run to copy for the preload');
  await c.query(`CREATE TEMP TABLE proto_run AS SELECT * FROM workflow_executions WHERE id = $1`, [proto.id]);
  await c.query(`CREATE TEMP TABLE proto_events AS SELECT e.*, e.recorded_at - w.created_at AS after_start
    FROM workflow_events e JOIN workflow_executions w ON w.id = e.execution_id WHERE e.execution_id = $1`, [proto.id]);
  const events = Number((await c.query<{ n: string }>('SELECT count(*)::TEXT AS n FROM proto_events')).rows[0]?.n ?? 0);
  const timed = ['id', 'created_at', 'started_at', 'last_transition_at', 'completed_at', 'updated_at'];
  const cols = (await c.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'workflow_executions' ORDER BY ordinal_position`,
  )).rows.map((r) => r.column_name).filter((col) => !timed.includes(col));
  // Keys and indexes, dropped now and made again after the load (definitions as the migrations left them).
  const keys = (await c.query<{ tbl: string; name: string; def: string }>(
    `SELECT conrelid::regclass::TEXT AS tbl, conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
     WHERE conrelid = ANY($1::regclass[]) AND contype IN ('p', 'u')`, [PRELOADED],
  )).rows;
  const indexes = (await c.query<{ name: string; def: string }>(
    `SELECT indexrelid::regclass::TEXT AS name, pg_get_indexdef(indexrelid) AS def FROM pg_index
     WHERE indrelid = ANY($1::regclass[]) AND NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conindid = indexrelid)`, [PRELOADED],
  )).rows;
  for (const k of keys) await c.query(`ALTER TABLE ${k.tbl} DROP CONSTRAINT ${k.name}`);
  for (const i of indexes) await c.query(`DROP INDEX ${i.name}`);
  const chunk = 100_000;
  for (let from = 0; from < n; from += chunk) {
    const to = Math.min(n, from + chunk);
    await c.query('BEGIN');
    await c.query(`CREATE TEMP TABLE chunk_runs ON COMMIT DROP AS
      SELECT gen_random_uuid() AS id, now() - (g * INTERVAL '1 second') - INTERVAL '1 hour' AS t FROM generate_series($1::INT4, $2::INT4) g`, [from + 1, to]);
    await c.query(`INSERT INTO workflow_executions (${timed.join(', ')}, ${cols.join(', ')})
      SELECT r.id, r.t, r.t, r.t + (p.last_transition_at - p.created_at), r.t + (p.completed_at - p.created_at), r.t + (p.updated_at - p.created_at), ${cols.map((col) => `p.${col}`).join(', ')}
      FROM chunk_runs r, proto_run p`);
    await c.query(`INSERT INTO workflow_events (execution_id, seq, type, event_key, state_name, iteration_number, payload, recorded_at)
      SELECT r.id, e.seq, e.type, e.event_key, e.state_name, e.iteration_number, e.payload, r.t + e.after_start FROM chunk_runs r, proto_events e`);
    await c.query('COMMIT');
    out(`  preloaded ${to} terminal runs, ${to * events} events (${secs()} s)`);
  }
  for (const k of keys) {
    await c.query(`ALTER TABLE ${k.tbl} ADD CONSTRAINT ${k.name} ${k.def}`);
    out(`  ${k.tbl}: ${k.name} built (${secs()} s)`);
  }
  for (const i of indexes) {
    await c.query(i.def);
    out(`  ${i.name} built (${secs()} s)`);
  }
  for (const t of PRELOADED) await c.query(`VACUUM ANALYZE ${t}`);
  const size = (await c.query<{ size: string }>(`SELECT pg_size_pretty(sum(pg_total_relation_size(t::regclass))) AS size FROM unnest($1::TEXT[]) t`, [PRELOADED])).rows[0]?.size;
  out(`  preload done: ${n} runs, ${n * events} events, ${size} on disk, ${secs()} s (VACUUM ANALYZE included)`);
}

/** The node process: this checkout's bin, or `root`'s (an older checkout) through a shell that execs it. */
function startNode(env: Record<string, string | undefined>, root?: string): Promise<NodeProcess> {
  if (!root) return startOrchNode(env);
  const wrap = ['sh', '-c', `shift 2; exec "${process.execPath}" "${path.join(root, 'bin/orch.js')}" "$@"`, 'orch'];
  return startOrchNode(env, [], 180_000, wrap);
}

export async function benchSoak(o: SoakOptions, out: (line: string) => void): Promise<SoakMinute[]> {
  const server = o.sharedPg ? undefined : await startPrivatePg(o.pgSettings);
  const shared = o.sharedPg ? await createTestDatabase() : undefined;
  const url = shared ? shared.url : await server!.createDatabase('soak');
  const dbName = new URL(url).pathname.slice(1);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-soak-'));
  const minutes: SoakMinute[] = [];
  let node: NodeProcess | undefined;
  const c = new pg.Client({ connectionString: url });
  const probe = new pg.Client({ connectionString: url });
  try {
    await c.connect();
    out(`soak: ${o.clients} clients, ${o.minutes} min, preload ${o.preload}, ${shared ? 'shared PostgreSQL' : 'private PostgreSQL'}${o.pgSettings ? ` ${JSON.stringify(o.pgSettings)}` : ''}, node ${o.orchRoot ?? 'this checkout'}`);
    node = await startNode({ DATABASE_URL: url, REDIS_URL: undefined, ORCH_DATA_DIR: path.join(dir, 'data'), ORCH_LOG_LEVEL: 'warn' }, o.orchRoot);
    const base = node.banner.http;
    const token = node.banner.dev_token ?? '';
    const deploy = await fetch(`${base}/v1/workflows?force=true`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/yaml' },
      body: raceManifest(),
    });
    if (deploy.status !== 201) throw new Error(`deploy answered ${deploy.status} ${await deploy.text()}`);
    await oneRun(base, token);
    if (o.preload > 0) await preload(c, o.preload, out);
    if (server) await c.query('SELECT pg_stat_statements_reset()');
    await c.query('SELECT pg_stat_reset()');
    const done: { at: number; ms: number }[] = [];
    const errors: string[] = [];
    const t0 = Date.now();
    const end = t0 + o.minutes * 60_000;
    let minuteStart = t0;
    let counted = 0;
    let seqBefore = await largeTableSeqScans(c);
    // Its own connection: the sampler queries every 250 ms beside the per-minute reads on `c`.
    await probe.connect();
    const backends = new BackendCpu(probe);
    await backends.start();
    let pgCpuBefore = 0;
    let nodeCpuBefore = await cpuSeconds(node.child.pid!);
    const closeMinute = async (): Promise<void> => {
        const now = Date.now();
        const slice = done.slice(counted);
        counted = done.length;
        const lat = slice.map((d) => d.ms).sort((a, b) => a - b);
        const seq = await largeTableSeqScans(c).catch(() => seqBefore);
        const pgCpu = await backends.soFar().catch(() => pgCpuBefore);
        const nodeCpu = await cpuSeconds(node!.child.pid!).catch(() => nodeCpuBefore);
        const m: SoakMinute = {
          minute: minutes.length + 1,
          runs: slice.length,
          perSecond: slice.length / ((now - minuteStart) / 1000),
          p50Ms: percentile(lat, 50),
          p99Ms: percentile(lat, 99),
          rssMb: await rssMb(node!.child.pid!),
          load: os.loadavg()[0] ?? 0,
          seqScans: seq.scans - seqBefore.scans,
          seqTuples: seq.tuples - seqBefore.tuples,
          nodeCpuMsPerRun: (1000 * (nodeCpu - nodeCpuBefore)) / Math.max(1, slice.length),
          pgCpuMsPerRun: (pgCpu - pgCpuBefore) / Math.max(1, slice.length),
        };
        seqBefore = seq;
        pgCpuBefore = pgCpu;
        nodeCpuBefore = nodeCpu;
        minuteStart = now;
        minutes.push(m);
        out(`  minute ${m.minute}: ${m.runs} runs, ${m.perSecond.toFixed(1)} runs/s, p50 ${m.p50Ms.toFixed(0)} ms, p99 ${m.p99Ms.toFixed(0)} ms, RSS ${m.rssMb.toFixed(0)} MB, load ${m.load.toFixed(1)}, seq scans of the large tables ${m.seqScans} (${m.seqTuples} tuples), CPU per run: node ${m.nodeCpuMsPerRun.toFixed(1)} ms, PostgreSQL ${m.pgCpuMsPerRun.toFixed(1)} ms`);
    };
    const ticker = setInterval(() => void closeMinute(), 60_000);
    await Promise.all(
      Array.from({ length: o.clients }, async () => {
        while (Date.now() < end) {
          const s = performance.now();
          try {
            await oneRun(base, token);
            done.push({ at: Date.now(), ms: performance.now() - s });
          } catch (err) {
            errors.push((err as Error).message);
            if (errors.length > 50) throw new Error(`too many failed runs; first: ${errors[0]}`);
          }
        }
      }),
    );
    clearInterval(ticker);
    await backends.total();
    // The last minute's tick may not have come before the clients stopped: close it on what it saw.
    if (minutes.length < o.minutes) await closeMinute();
    out(`runs: ${done.length} completed, ${errors.length} failed${errors[0] ? ` (first: ${errors[0]})` : ''}`);
    out('| minute | runs | runs/s | p50 ms | p99 ms | node RSS MB | load avg | seq scans (tuples read), large tables | node CPU ms/run | PostgreSQL CPU ms/run |');
    out('|---|---|---|---|---|---|---|---|---|---|');
    for (const m of minutes) out(`| ${m.minute} | ${m.runs} | ${m.perSecond.toFixed(1)} | ${m.p50Ms.toFixed(0)} | ${m.p99Ms.toFixed(0)} | ${m.rssMb.toFixed(0)} | ${m.load.toFixed(1)} | ${m.seqScans} (${m.seqTuples}) | ${m.nodeCpuMsPerRun.toFixed(1)} | ${m.pgCpuMsPerRun.toFixed(1)} |`);
    const two = minutes[1]?.perSecond ?? 0;
    const last = minutes[minutes.length - 1]?.perSecond ?? 0;
    if (two > 0) out(`last minute / minute two: ${((100 * last) / two).toFixed(0)}% (target >= 90%)`);
    // plans: how many times the statement was planned (a cached plan is not); planning per call = total / calls.
    const stmts = !server ? { rows: [] } : await c.query<{ calls: string; total_ms: number; mean_ms: number; plans: string; plan_ms: number; plan_per_call_ms: number; rows: string; query: string }>(
      `SELECT calls::TEXT, round(total_exec_time::NUMERIC, 0)::FLOAT8 AS total_ms, round(mean_exec_time::NUMERIC, 3)::FLOAT8 AS mean_ms, plans::TEXT, round(mean_plan_time::NUMERIC, 3)::FLOAT8 AS plan_ms,
         round((total_plan_time / GREATEST(calls, 1))::NUMERIC, 3)::FLOAT8 AS plan_per_call_ms, rows::TEXT,
         regexp_replace(left(query, 110), '\\s+', ' ', 'g') AS query
       FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) ORDER BY total_exec_time DESC LIMIT 12`,
      [dbName],
    );
    // Planning time is counted only with --pg pg_stat_statements.track_planning=on (0 otherwise).
    out('| statement (first 110 characters) | calls | total ms | mean ms | times planned | mean planning ms | planning ms per call | rows |');
    out('|---|---|---|---|---|---|---|---|');
    for (const s of stmts.rows) out(`| \`${s.query.replace(/\|/g, '\\|')}\` | ${s.calls} | ${s.total_ms} | ${s.mean_ms} | ${s.plans} | ${s.plan_ms} | ${s.plan_per_call_ms} | ${s.rows} |`);
    const tables = await c.query<{ relname: string; seq_scan: string; seq_tup_read: string; idx_scan: string; n_tup_upd: string; n_tup_hot_upd: string; n_live_tup: string; n_dead_tup: string }>(
      `SELECT relname, seq_scan::TEXT, seq_tup_read::TEXT, COALESCE(idx_scan, 0)::TEXT AS idx_scan, n_tup_upd::TEXT, n_tup_hot_upd::TEXT, n_live_tup::TEXT, n_dead_tup::TEXT
       FROM pg_stat_user_tables WHERE relname IN ('workflow_executions', 'workflow_events', 'cluster_nodes', 'stimuli', 'executions') ORDER BY relname`,
    );
    out('| table | seq scans | tuples read by seq scans | index scans | updates | HOT updates | HOT % | live | dead |');
    out('|---|---|---|---|---|---|---|---|---|');
    for (const t of tables.rows) {
      const hot = Number(t.n_tup_upd) > 0 ? ((100 * Number(t.n_tup_hot_upd)) / Number(t.n_tup_upd)).toFixed(0) : '-';
      out(`| ${t.relname} | ${t.seq_scan} | ${t.seq_tup_read} | ${t.idx_scan} | ${t.n_tup_upd} | ${t.n_tup_hot_upd} | ${hot} | ${t.n_live_tup} | ${t.n_dead_tup} |`);
    }
    return minutes;
  } finally {
    await c.end().catch(() => undefined);
    await probe.end().catch(() => undefined);
    if (node) await node.kill('SIGTERM');
    await server?.close();
    await shared?.drop();
    await rm(dir, { recursive: true, force: true });
    await writeFile(path.join(os.tmpdir(), 'orch-soak-last.json'), JSON.stringify(minutes)).catch(() => undefined);
  }
}
