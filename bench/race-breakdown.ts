// Where one workflow of the API race spends its time at low concurrency (issue 16: at c = 1 orch's HTTP p50 was
// Restate's, 28 ms, with the node at 15 ms of CPU per workflow against 3.5 at c = 64). `orch up` (from dist/) on a
// private PostgreSQL (default durability, WAL I/O timing on), W race workflows through one public path at
// concurrency c, and per workflow:
//   - wall time, and (HTTP, with the pg-timing preload) the part inside statements: each statement from the node's
//     Client.query call to its answer, the gaps between a workflow's statements (the engine's work for a step, the
//     writer's end-of-turn hop), before the first (request → start statement) and after the last (→ response);
//   - CPU of the node by thread (user / system), of the PostgreSQL backends and of its other processes (WAL writer…);
//   - WAL records, bytes, writes and syncs (pg_stat_wal, with their time), statements (pg_stat_statements);
//   - with --profile, the node's V8 profile over the load window only (self time by file and function).
//   npm run bench -- race-breakdown [--path http|grpc] [--workflows W] [--concurrency C] [--profile]
import { readFile, readdir, rm } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startPrivatePg } from './private-pg.ts';
import { CLK_TCK, statFields } from './proc-cpu.ts';
import { drive } from './workflow-race.ts';
import { startOrchApi, type ApiPath } from './workflow-race-api.ts';
import { summarize as summarizeProfile, type CpuProfile } from './api-profile.ts';

/** ms of user and system CPU per thread name of a process (/proc/<pid>/task/<tid>/stat). */
async function threadCpu(pid: number): Promise<Map<string, { user: number; sys: number }>> {
  const out = new Map<string, { user: number; sys: number }>();
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
    if (!stat) continue;
    const name = `${stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"))}/${tid === String(pid) ? "main" : tid}`;
    const f = statFields(stat);
    const cur = out.get(name) ?? { user: 0, sys: 0 };
    cur.user += (Number(f[11]) * 1000) / CLK_TCK;
    cur.sys += (Number(f[12]) * 1000) / CLK_TCK;
    out.set(name, cur);
  }
  return out;
}

/** ms of CPU per kind of process of a PostgreSQL server (children of the postmaster, by their title). */
async function serverCpu(postmaster: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const p of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(p)) continue;
    const stat = await readFile(`/proc/${p}/stat`, 'utf8').catch(() => '');
    if (!stat) continue;
    const f = statFields(stat);
    if (Number(f[1]) !== postmaster && Number(p) !== postmaster) continue;
    const title = (await readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '')).replace(/\0/g, ' ').trim();
    // "postgres: walwriter", "postgres: postgres race 127.0.0.1(5555) idle" (a backend), the postmaster itself.
    const kind = Number(p) === postmaster ? 'postmaster' : /^postgres: postgres /.test(title) ? 'backends' : title.replace(/^postgres: /, '').split(' ')[0] ?? title;
    out.set(kind, (out.get(kind) ?? 0) + ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK);
  }
  return out;
}

function diff<T>(a: Map<string, T>, b: Map<string, T>, sub: (x: T, y: T | undefined) => T): Map<string, T> {
  const out = new Map<string, T>();
  for (const [k, v] of b) out.set(k, sub(v, a.get(k)));
  return out;
}

interface Timing {
  statements: { name: string; start: number; end: number }[];
  requests: { url: string; start: number; end: number }[];
}

/** Splits each request's wall time by the statements sent while it ran (meaningful at c = 1 only). */
function splitRequests(t: Timing): { n: number; wall: number; inStatements: number; before: number; between: number; after: number; statements: number; byName: Map<string, { calls: number; ms: number }> } {
  const reqs = t.requests.filter((r) => r.end > 0 && r.url.includes('/run'));
  const sts = t.statements.filter((s) => s.end > 0).sort((a, b) => a.start - b.start);
  const acc = { n: 0, wall: 0, inStatements: 0, before: 0, between: 0, after: 0, statements: 0, byName: new Map<string, { calls: number; ms: number }>() };
  let i = 0;
  for (const r of reqs) {
    while (i < sts.length && sts[i]!.start < r.start) i++;
    const mine: typeof sts = [];
    for (let j = i; j < sts.length && sts[j]!.start < r.end; j++) mine.push(sts[j]!);
    if (mine.length === 0) continue;
    acc.n++;
    acc.wall += r.end - r.start;
    acc.before += mine[0]!.start - r.start;
    acc.after += r.end - mine[mine.length - 1]!.end;
    for (const [k, s] of mine.entries()) {
      acc.inStatements += s.end - s.start;
      if (k > 0) acc.between += s.start - mine[k - 1]!.end;
      const b = acc.byName.get(s.name) ?? { calls: 0, ms: 0 };
      b.calls++;
      b.ms += s.end - s.start;
      acc.byName.set(s.name, b);
    }
    acc.statements += mine.length;
  }
  return acc;
}

export async function benchRaceBreakdown(o: { path: ApiPath; workflows: number; concurrency: number; profile: boolean }, out: (line: string) => void): Promise<void> {
  const server = await startPrivatePg({ track_wal_io_timing: 'on', 'pg_stat_statements.track_planning': 'on' });
  const tmp = os.tmpdir();
  const timingFile = path.join(tmp, `orch-race-timing-${process.pid}.json`);
  const profileFile = path.join(tmp, `orch-race-breakdown-${process.pid}.cpuprofile`);
  const preloads = [`--require ${path.resolve('bench/pg-timing.cjs')}`, ...(o.profile ? [`--require ${path.resolve('bench/cpu-profile.cjs')}`] : [])];
  const saved = { ...process.env };
  process.env.BENCH_NODE_OPTIONS = [...preloads, saved.BENCH_NODE_OPTIONS ?? ''].join(' ').trim();
  process.env.PG_TIMING = timingFile;
  if (o.profile) Object.assign(process.env, { CPU_PROFILE: profileFile, CPU_PROFILE_WINDOW: '1' });
  try {
    const url = await server.createDatabase('race');
    const orch = await startOrchApi({ databaseUrl: url });
    const stats = new pg.Client({ connectionString: url });
    await stats.connect();
    const pid = orch.node.child.pid ?? 0;
    try {
      await drive(100, 8, () => orch.invoke[o.path]());
      await stats.query('SELECT pg_stat_statements_reset()');
      await stats.query("SELECT pg_stat_reset_shared('wal')");
      const [t0, s0] = [await threadCpu(pid), await serverCpu(server.pid)];
      process.kill(pid, 'SIGUSR2');
      // RACE_PERF=<file>: `perf record -g` of the node and its PostgreSQL backends over the first RACE_PERF_SECONDS (default 8) of the window
      // (give the node BENCH_NODE_OPTIONS=--perf-basic-prof so its JavaScript frames have names).
      const backends = (await stats.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')).rows.map((r) => r.pid);
      const perf = process.env.RACE_PERF
        ? spawn('perf', ['record', '-g', '-p', [pid, ...backends].join(','), '-o', process.env.RACE_PERF, '--', 'sleep', process.env.RACE_PERF_SECONDS ?? '8'], { stdio: 'ignore' })
        : undefined;
      const f = await drive(o.workflows, o.concurrency, () => orch.invoke[o.path]());
      process.kill(pid, 'SIGUSR2');
      const [t1, s1] = [await threadCpu(pid), await serverCpu(server.pid)];
      if (perf && perf.exitCode === null) await new Promise((r) => perf.once('exit', r));
      const w = f.workflows;
      const load = (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');
      out(`race-breakdown ${o.path} c=${o.concurrency} W=${w}: ${f.stepsPerSecond.toFixed(0)} steps/s, ${(1000 / f.workflowsPerSecond).toFixed(2)} ms wall per workflow (p50 ${f.p50Ms.toFixed(1)}, p99 ${f.p99Ms.toFixed(1)}); load ${load}`);
      const threads = diff(t0, t1, (b, a) => ({ user: b.user - (a?.user ?? 0), sys: b.sys - (a?.sys ?? 0) }));
      let nu = 0;
      let ns = 0;
      for (const v of threads.values()) (nu += v.user), (ns += v.sys);
      out(`node CPU per workflow: ${((nu + ns) / w).toFixed(2)} ms (user ${(nu / w).toFixed(2)}, system ${(ns / w).toFixed(2)}); by thread:`);
      for (const [k, v] of [...threads].filter(([, v]) => v.user + v.sys > 0).sort((a, b) => b[1].user + b[1].sys - a[1].user - a[1].sys)) {
        out(`  ${k}: user ${(v.user / w).toFixed(2)}, system ${(v.sys / w).toFixed(2)} ms/workflow`);
      }
      const procs = diff(s0, s1, (b, a) => b - (a ?? 0));
      out(`PostgreSQL server CPU per workflow: ${[...procs].filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${(v / w).toFixed(2)}`).join(', ')} ms`);
      const wal = (await stats.query<Record<string, string | number>>('SELECT wal_records, wal_fpi, wal_bytes, wal_write, wal_sync, wal_write_time, wal_sync_time FROM pg_stat_wal')).rows[0]!;
      const per = (k: string): string => (Number(wal[k]) / w).toFixed(2);
      out(`WAL per workflow: ${per('wal_records')} records, ${per('wal_fpi')} full-page images, ${(Number(wal.wal_bytes) / w / 1024).toFixed(1)} kB, ` +
        `${per('wal_write')} writes (${per('wal_write_time')} ms), ${per('wal_sync')} syncs (${per('wal_sync_time')} ms; ${(Number(wal.wal_sync_time) / Math.max(1, Number(wal.wal_sync))).toFixed(3)} ms each)`);
      const st = await stats.query<{ query: string; calls: string; total: number; plans: string; plan: number }>(
        `SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls::TEXT AS calls, total_exec_time AS total, plans::TEXT AS plans, total_plan_time AS plan FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY total_exec_time DESC`,
      );
      out(`statements (pg_stat_statements): ${(st.rows.reduce((a, r) => a + Number(r.calls), 0) / w).toFixed(2)} per workflow, ${(st.rows.reduce((a, r) => a + r.total, 0) / w).toFixed(2)} ms per workflow`);
      for (const r of st.rows.slice(0, 4)) out(`  ${(Number(r.calls) / w).toFixed(2)} calls, ${(r.total / w).toFixed(3)} ms executing, ${(Number(r.plans) / w).toFixed(2)} plans, ${(r.plan / w).toFixed(3)} ms planning: ${r.query.slice(0, 90)}`);
      // Meaningful at c = 1 only: with several requests in flight the statements of one request cannot be told apart.
      const timing = JSON.parse(await readFile(timingFile, 'utf8')) as Timing;
      const sp = splitRequests(timing);
      if (sp.n > 0 && o.concurrency === 1) {
        const m = (x: number): string => (x / sp.n).toFixed(2);
        out(`HTTP requests seen by the node: ${sp.n}; per request ${m(sp.wall)} ms in the node: ${m(sp.before)} before the first statement, ` +
          `${m(sp.inStatements)} inside ${(sp.statements / sp.n).toFixed(2)} statements (call → answer), ${m(sp.between)} between them, ${m(sp.after)} after the last`);
        for (const [k, v] of [...sp.byName].sort((a, b) => b[1].ms - a[1].ms)) out(`  ${(v.calls / sp.n).toFixed(2)} × ${(v.ms / v.calls).toFixed(3)} ms: ${k}`);
      }
    } finally {
      await stats.end().catch(() => undefined);
      await orch.close();
    }
    if (o.profile) {
      const s = summarizeProfile(JSON.parse(await readFile(profileFile, 'utf8')) as CpuProfile);
      out(`node V8 profile over the load window: ${s.total.toFixed(0)} ms sampled; self time by file:`);
      for (const [f, ms] of s.byFile) out(`  ${((ms / s.total) * 100).toFixed(1).padStart(5)} %  ${f}`);
      out('self time by function:');
      for (const [f, ms] of s.byFunction) out(`  ${((ms / s.total) * 100).toFixed(1).padStart(5)} %  ${f}`);
      out(`profile kept: ${profileFile}`);
    }
  } finally {
    for (const k of ['BENCH_NODE_OPTIONS', 'PG_TIMING', 'CPU_PROFILE', 'CPU_PROFILE_WINDOW']) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    await rm(timingFile, { force: true });
    await server.close();
  }
}
