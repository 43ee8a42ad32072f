// Agents at density (issue 24): N executions started at once through the HTTP API of a real node (its own process,
// from dist/, on PostgreSQL), each doing what a real agent does at minimum: two model turns from a scripted
// OpenAI-compatible server (a real server in this process) answering after `modelDelayMs` — a `cmd.run echo` tool
// call, then a final answer — and one command in the default bubblewrap sandbox.
//
// Reported: how many completed, executions/s (N / first POST to last completed_at), start-to-end p50/p99 (POST sent
// to the row's completed_at), POST /v1/executions p50/p99, the node's CPU per execution (/proc/<pid>/stat over the
// batch), `/health/live` p50/p99/max polled every 50 ms throughout (on the health port, the liveness thread, and on
// the main HTTP port), the node's RSS, and the sandboxes' memory: the
// processes under the node other than itself, grouped per sandbox (each bwrap process group), their PSS, RSS and USS
// from /proc/<pid>/smaps_rollup at the moment the most sandboxes were alive. Ends are noticed by reading the rows
// from PostgreSQL (the instrument costs the node nothing); `--observe-api` polls the list API instead, as a client
// without database access would (that polling is then part of the node's CPU).
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startOrchNode } from '../test/support/node-process.ts';
import { startScriptedLlm, textReply, toolCall, type ChatRequest } from '../test/support/scripted-llm.ts';
import { createTestDatabase } from '../test/support/pg.ts';
import { childCpuSeconds, cpuSeconds, liveChildrenCpuSeconds, statFields } from './proc-cpu.ts';
import { percentile } from './stats.ts';
import { startPrivatePg, type PrivatePg } from './private-pg.ts';
import pg from 'pg';

export interface DensityOptions {
  count: number;
  modelDelayMs: number;
  /** Write a V8 CPU profile of the node here (bench/cpu-profile.cjs). */
  cpuProfile?: string | undefined;
  /** Extra environment for the node (config overrides). */
  env?: Record<string, string>;
  /** Run on a private PostgreSQL with pg_stat_statements (bench/private-pg.ts) and report statements per execution. */
  privatePg?: boolean;
  /**
   * How the bench notices that executions ended (their end time is always the row's completed_at): 'db' (default)
   * reads the rows from PostgreSQL, so the instrument costs the node nothing; 'api' polls GET /v1/executions every
   * 250 ms per status, which costs the node 3-5 ms of CPU per execution of its own (docs/BENCHMARKS.md, issue 24).
   */
  observe?: 'db' | 'api';
  log?: (line: string) => void;
}

export interface DensityFigures {
  count: number;
  modelDelayMs: number;
  completed: number;
  failed: number;
  rejected: number;
  executionsPerSecond: number;
  startToEndMs: { p50: number; p99: number; max: number };
  postMs: { p50: number; p99: number; max: number };
  nodeCpuMsPerExecution: number;
  /**
   * CPU of the sandboxes (bwrap, the sandbox's processes, the command) per execution: reaped by the node's sandbox
   * spawner (its cutime + cstime) or by the node itself.
   */
  sandboxCpuMsPerExecution: number;
  /** The sandbox spawner's own CPU per execution (the forks and execs the node hands it; a process beside the node). */
  spawnerCpuMsPerExecution: number;
  /** This process (the scripted model server, the HTTP client, the pollers) per execution. */
  benchCpuMsPerExecution: number;
  /** `/health/live` on the health port (the liveness thread, http.health_port), polled every 50 ms. */
  healthLiveMs: { p50: number; p99: number; max: number; probes: number; failures: number };
  /** The same probe on the main HTTP port (answered by the main event loop), polled alongside. */
  mainPortLiveMs: { p50: number; p99: number; max: number; probes: number; failures: number };
  nodeRssMiB: { before: number; peak: number };
  sandboxes: { peakLive: number; processesPerSandbox: number; pssMiBPerSandbox: number; rssMiBPerSandbox: number; ussMiBPerSandbox: number };
  /** With --private-pg: statements per execution over the batch (pg_stat_statements), the top ones by calls. */
  statements?: { perExecution: number; top: { perExecution: number; query: string }[] };
  loadavg: string;
  wallSeconds: number;
}

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: density, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: "Run echo, then answer." }
  execution: { mode: one-shot, llm_timeout_seconds: 120, iteration_timeout: 600, validation: [] }
  security:
    resources: { timeout: 900 }
  tools:
    - name: cmd.run
      executor: builtin:cmd
      config: { subcommand_allowlist: { echo: [] } }
`;

/** The model: a `cmd.run echo` first, the final answer once the conversation holds the tool's result. */
function script(body: ChatRequest) {
  return body.messages.some((m) => m.role === 'tool') ? textReply('done') : toolCall('cmd_run', { command: 'echo', args: ['hello'] });
}

function stats(xs: number[]): { p50: number; p99: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: Math.round(percentile(s, 50)), p99: Math.round(percentile(s, 99)), max: Math.round(s[s.length - 1] ?? 0) };
}
const mib = (kb: number) => Math.round((kb / 1024) * 10) / 10;

async function statusKb(pid: number, field: string): Promise<number> {
  const text = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

interface Proc {
  pid: number;
  ppid: number;
  pgrp: number;
}

async function processTable(): Promise<Proc[]> {
  const out: Proc[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    if (!stat) continue;
    const f = statFields(stat);
    // A zombie (a sandbox that has exited, not yet reaped) holds no memory and is no live sandbox.
    if (f[0] === 'Z') continue;
    out.push({ pid: Number(name), ppid: Number(f[1]), pgrp: Number(f[2]) });
  }
  return out;
}

/** Every process below `root` (not root itself), with the host process group it belongs to. */
function descendants(table: Proc[], root: number): Proc[] {
  const children = new Map<number, Proc[]>();
  for (const p of table) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const out: Proc[] = [];
  const stack = [...(children.get(root) ?? [])];
  while (stack.length) {
    const p = stack.pop()!;
    out.push(p);
    stack.push(...(children.get(p.pid) ?? []));
  }
  return out;
}

async function rollup(pid: number): Promise<{ pss: number; rss: number; uss: number }> {
  const text = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { pss: kb('Pss'), rss: kb('Rss'), uss: kb('Private_Clean') + kb('Private_Dirty') };
}

/** The sandboxes under the node: its child processes (each sandbox is started detached: its own process group). */
async function sandboxMemory(nodePid: number): Promise<{ sandboxes: number; processes: number; pssKb: number; rssKb: number; ussKb: number }> {
  const table = await processTable();
  const procs = descendants(table, nodePid);
  // The node's own group (its helpers: the sandbox spawner) is not a sandbox; each sandbox is a group of its own.
  const own = table.find((p) => p.pid === nodePid)?.pgrp;
  const groups = new Set(procs.map((p) => p.pgrp).filter((g) => g !== nodePid && g !== own));
  let pssKb = 0;
  let rssKb = 0;
  let ussKb = 0;
  let processes = 0;
  for (const p of procs) {
    if (!groups.has(p.pgrp)) continue;
    const r = await rollup(p.pid);
    pssKb += r.pss;
    rssKb += r.rss;
    ussKb += r.uss;
    processes++;
  }
  return { sandboxes: groups.size, processes, pssKb, rssKb, ussKb };
}

export async function benchDensity(o: DensityOptions): Promise<DensityFigures> {
  const log = o.log ?? (() => undefined);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-density-'));
  const server: PrivatePg | undefined = o.privatePg ? await startPrivatePg() : undefined;
  const db = server ? { url: await server.createDatabase('density'), drop: () => server.close() } : await createTestDatabase();
  const llm = await startScriptedLlm(script, { delayMs: o.modelDelayMs });
  const config = path.join(dir, 'node.yaml');
  await writeFile(
    config,
    `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: density }
spec:
  node: { id: density, role: hybrid }
  llm_providers: [ { name: s, type: openai, endpoint: "${llm.url}", api_key: k, models: [ { alias: default, model: m } ] } ]
  runtime: { default_isolation: process }
`,
  );
  const env: Record<string, string | undefined> = {
    ORCH_CONFIG: config,
    ORCH_DATA_DIR: path.join(dir, 'data'),
    DATABASE_URL: db.url,
    REDIS_URL: undefined,
    ORCH_FROM_SOURCE: undefined,
    ORCH_HEALTH_PORT: '0',
    ...o.env,
  };
  if (o.cpuProfile) {
    env.NODE_OPTIONS = `--require ${path.resolve('bench/cpu-profile.cjs')}`;
    env.CPU_PROFILE = o.cpuProfile;
    env.CPU_PROFILE_WINDOW = '1'; // the batch only (SIGUSR2 at its start and end), not start-up
  }
  const node = await startOrchNode(env);
  const pid = node.child.pid!;
  const watcher = new pg.Client({ connectionString: db.url });
  // A dropped connection fails the watcher's next query (the run then fails, saying so), never the bench process.
  watcher.on('error', (err) => log(`density: the watcher's database connection failed: ${err.message}`));
  await watcher.connect();
  const base = node.banner.http;
  const auth = { authorization: `Bearer ${node.banner.dev_token ?? ''}`, 'content-type': 'application/json' };
  let stopHealth = false;
  try {
    const dep = await fetch(`${base}/v1/agents`, { method: 'POST', headers: auth, body: JSON.stringify({ manifest_yaml: AGENT }) });
    if (dep.status !== 201) throw new Error(`deploy: ${dep.status} ${await dep.text()}`);
    const { agent_id } = (await dep.json()) as { agent_id: string };
    // One warm-up execution (first-use costs: module loading, JIT, the pool's connections).
    await runBatch(1);
    const rssBefore = await statusKb(pid, 'VmRSS');

    // /health/live every 50 ms, each probe bounded at 10 s, for the whole batch: on the health port (the liveness
    // thread) and on the main port (the event loop), side by side.
    const healthUrl = node.banner.health;
    const probeLoop = (url: string | undefined) => {
      const ms: number[] = [];
      let failures = 0;
      const done = (async () => {
        while (url && !stopHealth) {
          const t = performance.now();
          try {
            const r = await fetch(url, { signal: AbortSignal.timeout(10_000) });
            await r.arrayBuffer();
            if (r.status !== 200) failures++;
          } catch {
            failures++;
          }
          ms.push(performance.now() - t);
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      return { ms, failures: () => failures, done };
    };
    const threadProbe = probeLoop(healthUrl);
    const mainProbe = probeLoop(`${base}/health/live`);
    // Memory and peak sandbox count, sampled every 500 ms.
    let rssPeak = rssBefore;
    let peak = { sandboxes: 0, processes: 0, pssKb: 0, rssKb: 0, ussKb: 0 };
    const memLoop = (async () => {
      while (!stopHealth) {
        rssPeak = Math.max(rssPeak, await statusKb(pid, 'VmRSS'));
        const s = await sandboxMemory(pid);
        if (s.sandboxes > peak.sandboxes) peak = s;
        await new Promise((r) => setTimeout(r, 500));
      }
    })();

    const stats0 = server ? new pg.Client({ connectionString: db.url }) : undefined;
    await stats0?.connect();
    await stats0?.query('SELECT pg_stat_statements_reset()');
    if (o.cpuProfile) process.kill(pid, 'SIGUSR2');
    const cpu0 = await cpuSeconds(pid);
    const child0 = await childCpuSeconds(pid);
    const spawner0 = await liveChildrenCpuSeconds(pid);
    const bench0 = process.cpuUsage();
    const t0 = performance.now();
    const batch = await runBatch(o.count);
    const wall = (performance.now() - t0) / 1000;
    const cpu1 = await cpuSeconds(pid);
    const child1 = await childCpuSeconds(pid);
    const spawner1 = await liveChildrenCpuSeconds(pid);
    const benchCpu = process.cpuUsage(bench0);
    if (o.cpuProfile) process.kill(pid, 'SIGUSR2');
    stopHealth = true;
    await Promise.all([threadProbe.done, mainProbe.done, memLoop]);
    let statements: DensityFigures['statements'];
    if (stats0) {
      // The bench's own polling of the list (GET /v1/executions) is counted too; it is listed, so it can be told apart.
      const st = await stats0.query<{ query: string; calls: string }>(
        `SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls::TEXT AS calls, calls AS n FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY n DESC`,
      );
      await stats0.end();
      const per = (n: number) => Math.round((n / o.count) * 100) / 100;
      statements = {
        perExecution: per(st.rows.reduce((a, r) => a + Number(r.calls), 0)),
        top: st.rows.slice(0, 25).map((r) => ({ perExecution: per(Number(r.calls)), query: r.query.slice(0, 160) })),
      };
    }

    return {
      count: o.count,
      modelDelayMs: o.modelDelayMs,
      completed: batch.completed,
      failed: batch.failed,
      rejected: batch.rejected,
      executionsPerSecond: Math.round((batch.completed / batch.spanSeconds) * 10) / 10,
      startToEndMs: stats(batch.startToEnd),
      postMs: stats(batch.post),
      nodeCpuMsPerExecution: Math.round(((cpu1 - cpu0) * 1000) / o.count),
      sandboxCpuMsPerExecution: Math.round(((child1 - child0 + spawner1.reaped - spawner0.reaped) * 1000) / o.count),
      spawnerCpuMsPerExecution: Math.round(((spawner1.own - spawner0.own) * 1000) / o.count),
      benchCpuMsPerExecution: Math.round((benchCpu.user + benchCpu.system) / 1000 / o.count),
      healthLiveMs: { ...stats(threadProbe.ms), probes: threadProbe.ms.length, failures: threadProbe.failures() },
      mainPortLiveMs: { ...stats(mainProbe.ms), probes: mainProbe.ms.length, failures: mainProbe.failures() },
      nodeRssMiB: { before: mib(rssBefore), peak: mib(rssPeak) },
      sandboxes: {
        peakLive: peak.sandboxes,
        processesPerSandbox: peak.sandboxes ? Math.round((peak.processes / peak.sandboxes) * 10) / 10 : 0,
        pssMiBPerSandbox: peak.sandboxes ? mib(peak.pssKb / peak.sandboxes) : 0,
        rssMiBPerSandbox: peak.sandboxes ? mib(peak.rssKb / peak.sandboxes) : 0,
        ussMiBPerSandbox: peak.sandboxes ? mib(peak.ussKb / peak.sandboxes) : 0,
      },
      ...(statements ? { statements } : {}),
      loadavg: (await readFile('/proc/loadavg', 'utf8')).trim(),
      wallSeconds: Math.round(wall * 10) / 10,
    };

    /** Starts `n` executions at once and waits for all of them to end (rows read every 250 ms, `o.observe`). */
    async function runBatch(n: number) {
      const sentAt = new Map<string, number>();
      const epoch = Date.now() - performance.now();
      const post: number[] = [];
      let rejected = 0;
      const tFirst = performance.now();
      await Promise.all(
        Array.from({ length: n }, async () => {
          const t = performance.now();
          for (;;) {
            const r = await fetch(`${base}/v1/executions`, { method: 'POST', headers: auth, body: JSON.stringify({ agent_id, input: 'go' }) });
            const body = (await r.json()) as { execution_id?: string; error?: string };
            if (r.status === 200 || r.status === 201) {
              post.push(performance.now() - t);
              sentAt.set(body.execution_id!, t);
              return;
            }
            // Admission control said full: honour Retry-After like a well-behaved client, counted.
            if (r.status === 429 || r.status === 503) {
              rejected++;
              await new Promise((res) => setTimeout(res, Number(r.headers.get('retry-after') ?? '1') * 1000));
              continue;
            }
            throw new Error(`POST /v1/executions: ${r.status} ${JSON.stringify(body)}`);
          }
        }),
      );
      const ended = new Map<string, { status: string; at: number }>();
      const deadline = performance.now() + 30 * 60_000;
      while (o.observe !== 'api' && ended.size < n && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        const { rows } = await watcher.query<{ id: string; status: string; completed_at: Date }>(
          `SELECT id::TEXT AS id, status, completed_at FROM executions WHERE id = ANY($1::UUID[]) AND completed_at IS NOT NULL`,
          [[...sentAt.keys()].filter((id) => !ended.has(id))],
        );
        for (const row of rows) ended.set(row.id, { status: row.status, at: row.completed_at.getTime() - epoch });
      }
      while (o.observe === 'api' && ended.size < n && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        for (const status of ['completed', 'failed', 'cancelled']) {
          for (let offset = 0; ; offset += 200) {
            const r = await fetch(`${base}/v1/executions?agent_id=${agent_id}&status=${status}&limit=200&offset=${offset}`, { headers: auth });
            const { executions: rows } = (await r.json()) as { executions: { execution_id: string; completed_at: string | null }[] };
            for (const row of rows) {
              if (sentAt.has(row.execution_id) && !ended.has(row.execution_id)) {
                ended.set(row.execution_id, { status, at: Date.parse(row.completed_at ?? '') - epoch });
              }
            }
            if (rows.length < 200) break;
          }
        }
      }
      const startToEnd: number[] = [];
      let last = tFirst;
      let completed = 0;
      for (const [id, e] of ended) {
        startToEnd.push(e.at - sentAt.get(id)!);
        last = Math.max(last, e.at);
        if (e.status === 'completed') completed++;
      }
      log(`batch of ${n}: ${completed} completed, ${ended.size - completed} failed/cancelled, ${n - ended.size} unfinished`);
      const firstFailed = [...ended].find(([, e]) => e.status !== 'completed');
      if (firstFailed) {
        const r = await fetch(`${base}/v1/executions/${firstFailed[0]}`, { headers: auth });
        log(`  e.g. ${firstFailed[0]}: ${JSON.stringify(((await r.json()) as { reason?: string }).reason)}`);
      }
      return { completed, failed: n - completed, rejected, startToEnd, post, spanSeconds: Math.max(0.001, (last - tFirst) / 1000) };
    }
  } finally {
    stopHealth = true;
    await watcher.end().catch(() => undefined);
    await node.kill('SIGTERM');
    await llm.close();
    await db.drop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}
