// Where the API path of the workflow race spends its time (issue 16): `orch up` (from dist/) on a private PostgreSQL
// with pg_stat_statements, the V8 sampling profiler preloaded into the node (bench/cpu-profile.cjs), W race workflows
// through one public path at concurrency c. Reported per workflow: the node's CPU, the PostgreSQL backends' CPU,
// statements (calls and execution time, the top ones by time), then the profile's self time by function and by file.
//   npm run bench -- api-profile [--path http|grpc] [--workflows W] [--concurrency C]
import { readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { cpuSeconds } from './proc-cpu.ts';
import { startPrivatePg } from './private-pg.ts';
import { drive } from './workflow-race.ts';
import { pgCpuDelta, startOrchApi, type ApiPath } from './workflow-race-api.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function and per file (ms) from a .cpuprofile. */
export function summarize(p: CpuProfile): { total: number; byFunction: [string, number][]; byFile: [string, number][] } {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000));
  const fn = new Map<string, number>();
  const file = new Map<string, number>();
  let total = 0;
  for (const [id, ms] of self) {
    const n = byId.get(id);
    if (!n) continue;
    total += ms;
    const url = n.callFrame.url.replace(/^file:\/\//, '').replace(/.*\/node_modules\//, 'nm:').replace(/.*\/dist\//, 'dist/');
    const where = url || '(native)';
    const name = `${n.callFrame.functionName || '(anonymous)'} ${where}:${n.callFrame.lineNumber + 1}`;
    fn.set(name, (fn.get(name) ?? 0) + ms);
    const f = url.startsWith('nm:') ? url.split('/').slice(0, url.startsWith('nm:@') ? 2 : 1).join('/') : where;
    file.set(f, (file.get(f) ?? 0) + ms);
  }
  const top = (m: Map<string, number>, k: number): [string, number][] => [...m].sort((a, b) => b[1] - a[1]).slice(0, k);
  return { total, byFunction: top(fn, 30), byFile: top(file, 25) };
}

export async function benchApiProfile(o: { path: ApiPath; workflows: number; concurrency: number }, out: (line: string) => void): Promise<void> {
  const server = await startPrivatePg();
  const profile = path.join(os.tmpdir(), `orch-api-profile-${process.pid}.cpuprofile`);
  process.env.BENCH_NODE_OPTIONS = `--require ${path.resolve('bench/cpu-profile.cjs')}`;
  process.env.CPU_PROFILE = profile;
  try {
    const url = await server.createDatabase('race');
    const orch = await startOrchApi({ databaseUrl: url });
    const stats = new pg.Client({ connectionString: url });
    await stats.connect();
    try {
      await drive(100, 8, () => orch.invoke[o.path]());
      await stats.query('SELECT pg_stat_statements_reset()');
      const pid = orch.node.child.pid ?? 0;
      const [cpu0, pg0] = [await cpuSeconds(pid), await orch.pgCpu()];
      const f = await drive(o.workflows, o.concurrency, () => orch.invoke[o.path]());
      const [cpu1, pg1] = [await cpuSeconds(pid), await orch.pgCpu()];
      const w = f.workflows;
      out(`api-profile ${o.path} c=${o.concurrency} W=${w}: ${f.stepsPerSecond.toFixed(0)} steps/s p50 ${f.p50Ms.toFixed(1)} p99 ${f.p99Ms.toFixed(1)} ms; ` +
        `node ${(((cpu1 - cpu0) * 1000) / w).toFixed(2)} cpu ms/workflow, PostgreSQL backends ${((pgCpuDelta(pg0, pg1) * 1000) / w).toFixed(2)} cpu ms/workflow; load ${(await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ')}`);
      const st = await stats.query<{ query: string; calls: string; total: number; rows: string }>(
        `SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls::TEXT AS calls, total_exec_time AS total, rows::TEXT AS rows
           FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          ORDER BY total_exec_time DESC`,
      );
      const calls = st.rows.reduce((a, r) => a + Number(r.calls), 0);
      const time = st.rows.reduce((a, r) => a + r.total, 0);
      out(`statements: ${(calls / w).toFixed(1)} calls/workflow, ${(time / w).toFixed(2)} ms execution/workflow; top by time:`);
      out('| calls/wf | ms/wf | rows/call | statement |');
      out('|---|---|---|---|');
      for (const r of st.rows.slice(0, 15)) {
        out(`| ${(Number(r.calls) / w).toFixed(2)} | ${(r.total / w).toFixed(3)} | ${(Number(r.rows) / Math.max(1, Number(r.calls))).toFixed(1)} | ${r.query.slice(0, 140).replace(/\|/g, '\\|')} |`);
      }
    } finally {
      await stats.end().catch(() => undefined);
      await orch.close();
    }
    const s = summarize(JSON.parse(await readFile(profile, 'utf8')) as CpuProfile);
    out(`node profile (whole life, incl. start-up and warm-up): ${s.total.toFixed(0)} ms sampled; self time by file:`);
    for (const [f, ms] of s.byFile) out(`  ${((ms / s.total) * 100).toFixed(1).padStart(5)} %  ${f}`);
    out('self time by function:');
    for (const [f, ms] of s.byFunction) out(`  ${((ms / s.total) * 100).toFixed(1).padStart(5)} %  ${f}`);
    out(`profile kept: ${profile}`);
  } finally {
    delete process.env.BENCH_NODE_OPTIONS;
    await server.close();
    void rm;
  }
}
