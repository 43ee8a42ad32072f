// Messages to actors (issue 18): real `orch up` processes on one throwaway PostgreSQL database — controllers A and B,
// and a worker W joined to A — and a scripted model that holds any request naming `hold:<key>`.
//   approvals: runs of a Human-state loop are started through A (A holds them); each pending approval is approved
//     through B (B commits it and tells A with TellActor) or, for the floor, through A itself. Latency: from the
//     database — approvals.resolved_at to the recorded_at of the next visit's WorkflowStateEntered row.
//   cancel: an execution started through A runs on W, its model call held; it is cancelled through A or B. Latency:
//     the database's clock_timestamp() just before the call to executions.completed_at (W killed the sandbox and
//     recorded `cancelled`).
//   idle (benchWaitingRuns): N runs waiting on a Human state on one controller: its RSS and CPU per waiting run.
import { randomBytes, randomUUID } from 'node:crypto';
import { idFromVisit, visitKeyOf } from '../src/workflow/engine/ids.ts';
import { cpuSeconds } from './proc-cpu.ts';
import { percentile } from './stats.ts';
import { eventually, type NodeProcess } from '../test/support/node-process.ts';
import { Cleanup, allActive, llmProviders, nodeStarter, scratch, startHoldingLlm, type Scratch } from '../test/cluster/processes.ts';
import { api, type Api } from '../test/cluster/support.ts';
import { TELL_CANCEL_AGENT as AGENT, TELL_LOOP_WORKFLOW as LOOP } from '../test/cluster/tell-fixtures.ts';



export interface TellFigures {
  approvalViaOther: number[];
  approvalViaHolder: number[];
  cancelViaRouter: number[];
  cancelViaOther: number[];
  loadAverage: number;
}

function summary(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  // The first sample and the slowest three are named: with ~50 samples the p99 is the slowest, and the first message
  // between two nodes may also be the first use of their connection.
  return `p50 ${percentile(s, 50).toFixed(1)} ms, p99 ${percentile(s, 99).toFixed(1)} ms, max ${(s[s.length - 1] ?? 0).toFixed(1)} ms (${s.length} samples; first ${(xs[0] ?? 0).toFixed(1)} ms, slowest ${s.slice(-3).map((x) => x.toFixed(1)).join(' / ')} ms)`;
}

async function pending(s: Scratch, run: string, visit: number): Promise<string> {
  return eventually(async () => {
    const r = await s.db.query<{ id: string }>(`SELECT id::TEXT AS id FROM approvals WHERE workflow_execution_id = $1 AND visit = $2 AND status = 'pending'`, [run, visit]);
    return r.rows[0]?.id;
  }, 60_000, `approval of visit ${visit}`);
}

async function entered(s: Scratch, run: string, visit: number): Promise<number> {
  return eventually(async () => {
    const r = await s.db.query<{ ms: number }>(
      `SELECT EXTRACT(EPOCH FROM (e.recorded_at - a.resolved_at)) * 1000 AS ms
       FROM approvals a JOIN workflow_events e ON e.execution_id = a.workflow_execution_id
       WHERE a.workflow_execution_id = $1 AND a.visit = $2 AND e.type = 'WorkflowStateEntered' AND e.state_name = 'gate' AND e.iteration_number = $3`,
      [run, visit, visit + 1],
    );
    return r.rows[0] ? Number(r.rows[0].ms) : undefined;
  }, 60_000, `visit ${visit + 1}`);
}

export async function benchTell(o: { approvals: number; cancels: number }, out: (line: string) => void): Promise<TellFigures> {
  const c = new Cleanup();
  try {
    const llm = await startHoldingLlm(c);
    const s = await scratch(c, 'orch-bench-tell-');
    const start = nodeStarter(c, s, { env: { ORCH_LOG_LEVEL: 'warn' } });
    const sfx = randomBytes(3).toString('hex');
    const ids = { a: `ctl-a-${sfx}`, b: `ctl-b-${sfx}`, w: `w-${sfx}` };
    const ctl = (id: string): string => `  node: { id: ${id}, role: controller }\n  cluster: { heartbeat_interval_seconds: 1 }\n`;
    const [a, b] = (await Promise.all([start(ids.a, ctl(ids.a)), start(ids.b, ctl(ids.b))])) as [NodeProcess, NodeProcess];
    const A: Api = { http: a.banner.http, token: a.banner.dev_token ?? '' };
    const B: Api = { http: b.banner.http, token: b.banner.dev_token ?? '' };
    await start(ids.w, `  node: { id: ${ids.w}, role: worker }\n  cluster: { controller: "${a.banner.cluster}", heartbeat_interval_seconds: 1 }\n${llmProviders(llm.url)}  runtime: { default_isolation: process }\n`);
    await allActive(A, [ids.w], 60_000, 'the worker to join A');
    const figures: TellFigures = { approvalViaOther: [], approvalViaHolder: [], cancelViaRouter: [], cancelViaOther: [], loadAverage: 0 };

    const dep = await api(A, 'POST', '/v1/workflows', { manifest_yaml: LOOP });
    if (dep.status !== 201) throw new Error(`deploy: ${dep.status} ${JSON.stringify(dep.body)}`);
    // Alternating B (another node) and A (the holder, the in-process floor), one approval at a time.
    let done = 0;
    while (done < o.approvals) {
      const r = await api<{ execution_id: string }>(A, 'POST', '/v1/workflows/tell-loop/run', { input: {} });
      if (r.status !== 201) throw new Error(`run: ${r.status} ${JSON.stringify(r.body)}`);
      const run = r.body.execution_id;
      for (let visit = 1; visit < 20 && done < o.approvals; visit++, done++) {
        const id = await pending(s, run, visit);
        const viaOther = visit % 2 === 1;
        const res = await api(viaOther ? B : A, 'POST', `/v1/human-approvals/${id}/approve`, {});
        if (res.status !== 200) throw new Error(`approve: ${res.status} ${JSON.stringify(res.body)}`);
        (viaOther ? figures.approvalViaOther : figures.approvalViaHolder).push(await entered(s, run, visit));
      }
    }
    out(`  approval through B (A holds the run) → next state entered: ${summary(figures.approvalViaOther)}`);
    // The first approval through B is also B's first API request of its life (its auth, route and statements cold):
    // shown apart too, so that a start-up cost is not read as the steady state's tail.
    out(`  the same without B's first: ${summary(figures.approvalViaOther.slice(1))}`);
    out(`  approval through A (the holder, in-process floor) → next state entered: ${summary(figures.approvalViaHolder)}`);

    const agent = await api<{ agent_id: string }>(A, 'POST', '/v1/agents', { manifest_yaml: AGENT });
    if (agent.status !== 201) throw new Error(`agent: ${agent.status}`);
    for (let i = 0; i < o.cancels; i++) {
      const key = `c${i}`;
      const st = await api<{ execution_id: string }>(A, 'POST', '/v1/executions', { agent_id: agent.body.agent_id, input: `hold:${key}` });
      if (st.status !== 200) throw new Error(`execution: ${st.status}`);
      const id = st.body.execution_id;
      await eventually(async () => (llm.asked.has(key) ? true : undefined), 60_000, 'the execution to reach the model');
      const viaOther = i % 2 === 1;
      const t0 = (await s.db.query<{ at: Date }>('SELECT clock_timestamp() AS at')).rows[0]!.at;
      const res = await api(viaOther ? B : A, 'POST', `/v1/executions/${id}/cancel`);
      if (res.status !== 200) throw new Error(`cancel: ${res.status}`);
      const end = await eventually(async () => {
        const r = await s.db.query<{ status: string; completed_at: Date | null }>('SELECT status, completed_at FROM executions WHERE id = $1', [id]);
        return r.rows[0]?.completed_at ? r.rows[0] : undefined;
      }, 60_000, 'the execution to end');
      llm.holds.get(key)?.();
      if (end.status !== 'cancelled') throw new Error(`execution ended ${end.status}`);
      (viaOther ? figures.cancelViaOther : figures.cancelViaRouter).push(end.completed_at!.getTime() - t0.getTime());
    }
    out(`  cancel through A (routed it) of an execution on W → cancelled: ${summary(figures.cancelViaRouter)}`);
    out(`  cancel through B of an execution on W → cancelled: ${summary(figures.cancelViaOther)}`);
    figures.loadAverage = (await import('node:os')).loadavg()[0] ?? 0;
    out(`  load average ${figures.loadAverage.toFixed(1)}`);
    return figures;
  } finally {
    await c.run();
  }
}

async function rssKb(pid: number): Promise<number> {
  const status = await (await import('node:fs/promises')).readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

export interface WaitingFigures {
  rssPerRunKb: number;
  idleCpuPercent: number;
  baseCpuPercent: number;
  rssMb: number;
  wakeMs: number[];
}

/** Columns of a table (for the set-based copies of a template row). */
async function columnsOf(s: Scratch, table: string): Promise<string[]> {
  const r = await s.db.query<{ c: string }>(`SELECT column_name AS c FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position`, [table]);
  return r.rows.map((x) => x.c);
}

/**
 * N runs waiting on a Human state on one controller (spec.workflow.park_after_seconds `parkAfter`): RSS and idle CPU
 * of the node's process before and after, per waiting run, then `wakes` of them approved one at a time through the
 * API: approval resolved_at → the next visit's WorkflowStateEntered (database times). The first `viaApi` runs are
 * started through the API and parked by the engine; the rest are set-based copies of one of them (new ids, their
 * approvals with the ids the engine derives), written straight into PostgreSQL in batches, as the engine leaves them.
 */
export async function benchWaitingRuns(
  o: { n: number; idleSeconds: number; parkAfter: number; viaApi: number; wakes: number },
  out: (line: string) => void,
): Promise<WaitingFigures> {
  const c = new Cleanup();
  try {
    const s = await scratch(c, 'orch-bench-idle-');
    const start = nodeStarter(c, s, { env: { ORCH_LOG_LEVEL: 'warn' } });
    const id = `ctl-${randomBytes(3).toString('hex')}`;
    const node = await start(id, `  node: { id: ${id}, role: controller }\n  cluster: { heartbeat_interval_seconds: 1 }\n  workflow: { park_after_seconds: ${o.parkAfter} }\n`);
    const A: Api = { http: node.banner.http, token: node.banner.dev_token ?? '' };
    const pid = node.child.pid!;
    const dep = await api(A, 'POST', '/v1/workflows', { manifest_yaml: LOOP });
    if (dep.status !== 201) throw new Error(`deploy: ${dep.status}`);
    const cpuOver = async (seconds: number): Promise<number> => {
      const c0 = await cpuSeconds(pid);
      await new Promise((r) => setTimeout(r, seconds * 1000));
      return ((await cpuSeconds(pid)) - c0) / seconds * 100;
    };
    await new Promise((r) => setTimeout(r, 3000));
    const rss0 = await rssKb(pid);
    const base = await cpuOver(o.idleSeconds);
    out(`  before: RSS ${(rss0 / 1024).toFixed(1)} MB, idle CPU ${base.toFixed(2)}% of a core`);
    const t0 = Date.now();
    const viaApi = Math.min(o.n, Math.max(1, o.viaApi));
    const started: string[] = [];
    for (let i = 0; i < viaApi; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, viaApi - i) }, async () => {
        const r = await api<{ execution_id: string }>(A, 'POST', '/v1/workflows/tell-loop/run', { input: {} });
        if (r.status !== 201) throw new Error(`run: ${r.status} ${JSON.stringify(r.body)}`);
        started.push(r.body.execution_id);
      }));
    }
    const settled = o.parkAfter <= 60 ? 'parked' : `status = 'waiting_for_human_input'`;
    await eventually(async () => {
      const r = await s.db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM workflow_executions WHERE ${settled}`);
      return (r.rows[0]?.n ?? 0) >= viaApi ? true : undefined;
    }, 600_000, `${viaApi} runs waiting`);
    out(`  ${viaApi} runs started through the API and ${settled === 'parked' ? 'parked' : 'waiting'} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    if (o.n > viaApi) {
      if (settled !== 'parked') throw new Error('copies are written parked: use --park-after ≤ 60 or --via-api = --waiting');
      const t1 = Date.now();
      const template = started[0]!;
      const wcols = await columnsOf(s, 'workflow_executions');
      const acols = await columnsOf(s, 'approvals');
      const wsel = wcols.map((col) => (col === 'id' ? 'v.id' : col === 'created_at' || col === 'started_at' || col === 'updated_at' ? 'now()' : `t.${col}`)).join(', ');
      const asel = acols.map((col) => (col === 'id' ? 'v.aid' : col === 'workflow_execution_id' ? 'v.id' : col === 'created_at' ? 'now()' : `t.${col}`)).join(', ');
      for (let done = viaApi; done < o.n; ) {
        const k = Math.min(10_000, o.n - done);
        const ids = Array.from({ length: k }, () => randomUUID());
        const aids = ids.map((x) => idFromVisit(visitKeyOf(x, 'gate', 1), 'approval'));
        await s.db.query(
          `WITH v AS (SELECT * FROM unnest($1::UUID[], $2::UUID[]) AS v(id, aid)),
             w AS (INSERT INTO workflow_executions (${wcols.join(', ')}) SELECT ${wsel} FROM workflow_executions t, v WHERE t.id = $3 RETURNING 1)
           INSERT INTO approvals (${acols.join(', ')}) SELECT ${asel} FROM approvals t, v WHERE t.workflow_execution_id = $3 AND t.visit = 1`,
          [ids, aids, template],
        );
        done += k;
      }
      await s.db.query('ANALYZE workflow_executions');
      await s.db.query('ANALYZE approvals');
      out(`  ${o.n - viaApi} more parked runs written set-based (copies of one, batches of 10,000) in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
    }
    // Past one parked-run scan (30 s by default) would be fairer still; the idle window below includes one anyway.
    await new Promise((r) => setTimeout(r, 5000));
    const rss1 = await rssKb(pid);
    const idle = await cpuOver(o.idleSeconds);
    const perRun = (rss1 - rss0) / o.n;
    out(`  with ${o.n} waiting: RSS ${(rss1 / 1024).toFixed(1)} MB (+${((rss1 - rss0) / 1024).toFixed(1)} MB = ${perRun.toFixed(2)} kB per waiting run), idle CPU ${idle.toFixed(2)}% of a core over ${o.idleSeconds} s`);
    // Wakes: runs picked across the whole set (API-started and copies), approved one at a time.
    const pick = await s.db.query<{ id: string; aid: string }>(
      `SELECT w.id::TEXT AS id, a.id::TEXT AS aid FROM workflow_executions w JOIN approvals a ON a.workflow_execution_id = w.id AND a.status = 'pending'
       WHERE w.status = 'waiting_for_human_input' ORDER BY random() LIMIT $1`,
      [o.wakes],
    );
    const wakeMs: number[] = [];
    for (const p of pick.rows) {
      const res = await api(A, 'POST', `/v1/human-approvals/${p.aid}/approve`, {});
      if (res.status !== 200) throw new Error(`approve: ${res.status} ${JSON.stringify(res.body)}`);
      wakeMs.push(await entered(s, p.id, 1));
    }
    out(`  woken by an approval (resolved → next state entered): ${summary(wakeMs)}`);
    const rss2 = await rssKb(pid);
    out(`  RSS after the wakes ${(rss2 / 1024).toFixed(1)} MB; load average ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    return { rssPerRunKb: perRun, idleCpuPercent: idle, baseCpuPercent: base, rssMb: rss1 / 1024, wakeMs };
  } finally {
    await c.run();
  }
}
