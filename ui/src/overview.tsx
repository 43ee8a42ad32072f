// The overview: live charts of the tenant's last hour. History comes from GET /v1/stats/history (per-minute buckets
// with cost and queue depth, and per-node samples; re-read every minute); the WebSocket feed adds what happens since:
// executions seen starting and finishing (with their duration and tokens) into the current minute, the executions
// waiting to start, and per-node CPU, memory, event-loop delay and heartbeat age sampled from the nodes stream every
// two seconds. Tokens and cost per agent (and per tenant, for operators) come from GET /v1/stats/usage.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from './feed.ts';
import { Chart } from './chart.tsx';
import type { Execution, NodeRow } from './types.ts';

interface Bucket {
  t: number;
  started: number;
  completed: number;
  failed: number;
  p50_ms: number | null;
  p99_ms: number | null;
  tokens: number;
  workflows_started: number;
  workflows_finished: number;
  cost: number | null;
  queue_depth: number | null;
}

/** One node's minute, as GET /v1/stats/history sends it. */
interface HistNodeSample {
  t: number;
  cpu_percent: number | null;
  memory_percent: number | null;
  event_loop_delay_ms: number | null;
  heartbeat_age_s: number | null;
}

interface History {
  buckets: Bucket[];
  nodes: Array<{ node_id: string; samples: HistNodeSample[] }>;
  currency: string;
  priced: boolean;
}

interface UsageRow {
  tenant_id: string;
  agent_name?: string;
  model?: string | null;
  executions: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number | null;
}
interface Usage {
  currency: string;
  priced: boolean;
  tenants: UsageRow[];
  agents: UsageRow[];
  unpriced_models: string[];
}

/** What the feed saw in one minute: counts and the durations of what finished. */
interface LiveMinute {
  started: number;
  completed: number;
  failed: number;
  tokens: number;
  durations: number[];
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const minuteOf = (ms: number): number => Math.floor(ms / 60_000) * 60;
const pct = (xs: number[], p: number): number | null => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
};
const COLORS = ['#2f6fde', '#1f8a4c', '#c53030', '#b7791f', '#6b3fa0', '#0f8a8a', '#a2271c', '#5b6472'];

/** Feeds live minutes from execution upserts; call `observe` for every executions-stream row. */
export class LiveStats {
  readonly minutes = new Map<number, LiveMinute>();
  private readonly seen = new Map<string, string>();
  /** Rows of the first snapshot are history (the API counts them), not news. */
  primed = false;

  observe(e: Execution): void {
    const before = this.seen.get(e.execution_id);
    this.seen.set(e.execution_id, e.status);
    if (!this.primed) return;
    const now = Date.now();
    const m = this.minute(minuteOf(now));
    if (before === undefined && Date.parse(e.created_at) > now - 120_000) m.started++;
    if (TERMINAL.has(e.status) && (before === undefined || !TERMINAL.has(before))) {
      if (e.status === 'completed') m.completed++;
      else if (e.status === 'failed') m.failed++;
      m.tokens += e.usage.prompt_tokens + e.usage.completion_tokens;
      if (e.completed_at) m.durations.push(Date.parse(e.completed_at) - Date.parse(e.created_at));
    }
    if (this.seen.size > 20_000) this.seen.clear();
  }

  private minute(t: number): LiveMinute {
    let m = this.minutes.get(t);
    if (!m) {
      m = { started: 0, completed: 0, failed: 0, tokens: 0, durations: [] };
      this.minutes.set(t, m);
      for (const k of this.minutes.keys()) if (k < t - 3600) this.minutes.delete(k);
    }
    return m;
  }
}

/** A node metric over time: the history's minutes, then the live samples. */
type Metric = 'cpu' | 'mem' | 'loop' | 'age';
interface LiveSample {
  t: number;
  pending: number;
  v: Record<Metric, Record<string, number | null>>;
}

const money = (x: number | null | undefined, currency: string): string =>
  x === null || x === undefined ? '–' : `${x < 1 ? x.toFixed(4) : x.toFixed(2)} ${currency}`;

/** Columns for uPlot from (time → value) maps per series: the union of the times, nulls where a series has none. */
function aligned(series: Array<Map<number, number | null>>): [number[], ...Array<Array<number | null>>] {
  const ts = [...new Set(series.flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
  return [ts, ...series.map((m) => ts.map((t) => m.get(t) ?? null))];
}

export function Overview({ token, live, nodes, pending, tick, operator }: { token: string; live: LiveStats; nodes: Map<string, NodeRow>; pending: () => number; tick: number; operator: boolean }) {
  const [history, setHistory] = useState<History & { at: number }>();
  const [usage, setUsage] = useState<Usage>();
  const [allTenants, setAllTenants] = useState(false);
  const [error, setError] = useState<string>();
  const samples = useRef<LiveSample[]>([]);
  const [, setSampled] = useState(0);

  useEffect(() => {
    let alive = true;
    const load = (): void =>
      void api<History>(token, 'GET', '/v1/stats/history?minutes=60')
        .then((h) => alive && (setHistory({ ...h, at: Date.now() }), setError(undefined)))
        .catch((err: unknown) => alive && setError((err as Error).message));
    load();
    const every = setInterval(load, 60_000);
    return () => ((alive = false), clearInterval(every));
  }, [token]);

  useEffect(() => {
    let alive = true;
    const load = (): void =>
      void api<Usage>(token, 'GET', `/v1/stats/usage?minutes=60${allTenants ? '&scope=cluster' : ''}`)
        .then((u) => alive && setUsage(u))
        .catch((err: unknown) => alive && setError(`usage: ${(err as Error).message}`));
    load();
    const every = setInterval(load, 30_000);
    return () => ((alive = false), clearInterval(every));
  }, [token, allTenants]);

  useEffect(() => {
    const sample = (): void => {
      const now = Date.now();
      const s: LiveSample = { t: now / 1000, pending: pending(), v: { cpu: {}, mem: {}, loop: {}, age: {} } };
      const n = (x: unknown): number | null => (typeof x === 'number' ? x : null);
      for (const row of nodes.values()) {
        s.v.cpu[row.node_id] = n(row.load?.cpu_utilization_percent);
        s.v.mem[row.node_id] = n(row.load?.memory_utilization_percent);
        s.v.loop[row.node_id] = n(row.load?.event_loop_delay_ms);
        s.v.age[row.node_id] = row.last_heartbeat_at ? Math.max(0, (now - Date.parse(row.last_heartbeat_at)) / 1000) : null;
      }
      samples.current.push(s);
      if (samples.current.length > 1800) samples.current.splice(0, samples.current.length - 1800);
      setSampled((x) => x + 1);
    };
    sample();
    const every = setInterval(sample, 2000);
    return () => clearInterval(every);
  }, [nodes, pending]);

  if (!history)
    return error ? (
      <div class="error-box">stats: {error}</div>
    ) : (
      <div class="loading muted" data-testid="overview-loading">
        <span class="spinner" /> loading the last hour…
      </div>
    );

  // History buckets, with what the feed saw since the history was read added to the minutes it happened in.
  const byT = new Map(history.buckets.map((b) => [b.t, { ...b }]));
  const fromT = minuteOf(history.at);
  for (const [t, m] of live.minutes) {
    if (t < fromT) continue;
    let b = byT.get(t);
    if (!b) {
      b = { t, started: 0, completed: 0, failed: 0, p50_ms: null, p99_ms: null, tokens: 0, workflows_started: 0, workflows_finished: 0, cost: null, queue_depth: null };
      byT.set(t, b);
    }
    b.started += m.started;
    b.completed += m.completed;
    b.failed += m.failed;
    b.tokens += m.tokens;
    if (m.durations.length) {
      b.p50_ms = pct(m.durations, 0.5);
      b.p99_ms = pct(m.durations, 0.99);
    }
  }
  const rows = [...byT.values()].sort((a, b) => a.t - b.t).slice(-60);
  const xs = rows.map((b) => b.t);
  const ids = [...new Set([...history.nodes.map((n) => n.node_id), ...nodes.keys()])].sort().slice(0, COLORS.length);
  const ns = samples.current;
  // The history's minutes up to the first live sample, then the live samples (every two seconds).
  const liveFrom = ns[0]?.t ?? Infinity;
  const nodeSeries = (metric: Metric, field: keyof HistNodeSample): [number[], ...Array<Array<number | null>>] =>
    aligned(
      ids.map((id) => {
        const m = new Map<number, number | null>();
        for (const s of history.nodes.find((n) => n.node_id === id)?.samples ?? []) if (s.t < liveFrom) m.set(s.t, s[field] as number | null);
        for (const s of ns) if (id in s.v[metric]) m.set(s.t, s.v[metric][id] ?? null);
        return m;
      }),
    );
  const nodeSpecs = ids.map((id, i) => ({ label: id, color: COLORS[i]! }));
  // Queue depth: the sampled minutes, then the live count of pending executions every two seconds.
  const queue = new Map<number, number | null>();
  for (const b of rows) if (b.queue_depth !== null && b.t < liveFrom) queue.set(b.t, b.queue_depth);
  for (const s of ns) queue.set(s.t, s.pending);
  const queueData = aligned([queue]);
  const totals = rows.reduce(
    (a, b) => ({ started: a.started + b.started, finished: a.finished + b.completed + b.failed, failed: a.failed + b.failed, tokens: a.tokens + b.tokens, cost: a.cost + (b.cost ?? 0) }),
    { started: 0, finished: 0, failed: 0, tokens: 0, cost: 0 },
  );
  const currency = history.currency;
  void tick;
  return (
    <div class="overview" data-testid="overview">
      <div class="kpis">
        <div class="kpi" data-testid="kpi-started">
          <b>{totals.started}</b> started
        </div>
        <div class="kpi" data-testid="kpi-finished">
          <b>{totals.finished}</b> finished
        </div>
        <div class="kpi" data-testid="kpi-failed">
          <b>{totals.failed}</b> failed
        </div>
        <div class="kpi" data-testid="kpi-tokens">
          <b>{totals.tokens}</b> model tokens
        </div>
        {history.priced ? (
          <div class="kpi" data-testid="kpi-cost" data-cost={totals.cost}>
            <b>{money(totals.cost, currency)}</b> cost
          </div>
        ) : null}
        <div class="kpi" data-testid="kpi-queue">
          <b>{ns.at(-1)?.pending ?? 0}</b> waiting to start
        </div>
        <div class="muted small">
          last 60 minutes{history.priced ? ` · cost from the node's price table (${currency}), re-read every minute` : ' · cost: no price table configured (spec.pricing), tokens shown'}
        </div>
      </div>
      <div class="charts">
        <Chart
          testid="chart-throughput"
          title="Executions per minute"
          series={[
            { label: 'started', color: COLORS[0]! },
            { label: 'completed', color: COLORS[1]! },
            { label: 'failed', color: COLORS[2]! },
            { label: 'workflow runs', color: COLORS[4]!, dash: [4, 3] },
          ]}
          data={[xs, rows.map((b) => b.started), rows.map((b) => b.completed), rows.map((b) => b.failed), rows.map((b) => b.workflows_started)]}
        />
        <Chart
          testid="chart-latency"
          title="Execution duration"
          unit="ms"
          series={[
            { label: 'p50', color: COLORS[0]! },
            { label: 'p99', color: COLORS[3]! },
          ]}
          data={[xs, rows.map((b) => b.p50_ms), rows.map((b) => b.p99_ms)]}
        />
        <Chart testid="chart-tokens" title="Model tokens per minute" series={[{ label: 'tokens', color: COLORS[4]! }]} data={[xs, rows.map((b) => b.tokens)]} />
        {history.priced ? (
          <Chart testid="chart-cost" title={`Cost per minute (${currency})`} series={[{ label: 'cost', color: COLORS[3]! }]} data={[xs, rows.map((b) => b.cost)]} />
        ) : null}
        <Chart testid="chart-queue" title="Queue depth (executions waiting to start)" series={[{ label: 'pending', color: COLORS[5]! }]} data={queueData} />
        <Chart testid="chart-node-load" title="Node CPU" unit="%" series={nodeSpecs} data={nodeSeries('cpu', 'cpu_percent')} />
        <Chart testid="chart-node-memory" title="Node memory" unit="%" series={nodeSpecs} data={nodeSeries('mem', 'memory_percent')} />
        <Chart testid="chart-event-loop" title="Event-loop delay (p99)" unit="ms" series={nodeSpecs} data={nodeSeries('loop', 'event_loop_delay_ms')} />
        <Chart testid="chart-heartbeat" title="Heartbeat age" unit="s" series={nodeSpecs} data={nodeSeries('age', 'heartbeat_age_s')} />
      </div>
      <UsageTable usage={usage} operator={operator} allTenants={allTenants} setAllTenants={setAllTenants} />
    </div>
  );
}

function UsageTable({ usage, operator, allTenants, setAllTenants }: { usage: Usage | undefined; operator: boolean; allTenants: boolean; setAllTenants: (v: boolean) => void }) {
  if (!usage) return null;
  const rows = (list: UsageRow[], kind: 'agent' | 'tenant') =>
    list.map((r) => (
      <tr data-testid={kind === 'agent' ? `usage-agent-${r.agent_name}` : `usage-tenant-${r.tenant_id}`} data-cost={r.cost ?? ''}>
        {kind === 'agent' ? (
          <>
            <td>{r.agent_name}</td>
            <td class="muted">{r.model ?? '–'}</td>
            {allTenants ? <td class="muted">{r.tenant_id}</td> : null}
          </>
        ) : (
          <td>{r.tenant_id}</td>
        )}
        <td class="num">{r.executions}</td>
        <td class="num">{r.prompt_tokens}</td>
        <td class="num">{r.completion_tokens}</td>
        <td class="num">{r.cost === null ? (usage.priced ? 'no price' : '–') : money(r.cost, usage.currency)}</td>
      </tr>
    ));
  const head = (first: string[]) => (
    <thead>
      <tr>
        {first.map((h) => (
          <th>{h}</th>
        ))}
        <th class="num">executions</th>
        <th class="num">input tokens</th>
        <th class="num">output tokens</th>
        <th class="num">cost</th>
      </tr>
    </thead>
  );
  return (
    <div class="panel usage" data-testid="usage">
      <div class="panel-head">
        <h2>Tokens and cost, last 60 minutes</h2>
        {operator ? (
          <label class="small">
            <input type="checkbox" data-testid="usage-all-tenants" checked={allTenants} onChange={(e) => setAllTenants((e.target as HTMLInputElement).checked)} /> all tenants
          </label>
        ) : null}
      </div>
      {usage.unpriced_models.length ? <div class="muted small">no price for: {usage.unpriced_models.join(', ')}</div> : null}
      <table class="usage-table" data-testid="usage-tenants">
        {head(['tenant'])}
        <tbody>{rows(usage.tenants, 'tenant')}</tbody>
      </table>
      <table class="usage-table" data-testid="usage-agents">
        {head(allTenants ? ['agent', 'model', 'tenant'] : ['agent', 'model'])}
        <tbody>{rows(usage.agents, 'agent')}</tbody>
      </table>
    </div>
  );
}
