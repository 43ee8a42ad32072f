// The overview: live charts of the tenant's last hour. History comes from GET /v1/stats/history (per-minute buckets,
// re-read every minute); the WebSocket feed adds what happens since, into the current minute: executions seen
// starting and finishing (with their duration and tokens), and per-node load and heartbeat age sampled from the
// nodes stream every two seconds.
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

interface NodeSample {
  t: number;
  load: Record<string, number | null>;
  age: Record<string, number | null>;
}

export function Overview({ token, live, nodes, tick }: { token: string; live: LiveStats; nodes: Map<string, NodeRow>; tick: number }) {
  const [history, setHistory] = useState<{ buckets: Bucket[]; at: number }>();
  const [error, setError] = useState<string>();
  const samples = useRef<NodeSample[]>([]);
  const [, setSampled] = useState(0);

  useEffect(() => {
    let alive = true;
    const load = (): void =>
      void api<{ buckets: Bucket[] }>(token, 'GET', '/v1/stats/history?minutes=60')
        .then((h) => alive && (setHistory({ buckets: h.buckets, at: Date.now() }), setError(undefined)))
        .catch((err: unknown) => alive && setError((err as Error).message));
    load();
    const every = setInterval(load, 60_000);
    return () => ((alive = false), clearInterval(every));
  }, [token]);

  useEffect(() => {
    const sample = (): void => {
      const now = Date.now();
      const s: NodeSample = { t: now / 1000, load: {}, age: {} };
      for (const n of nodes.values()) {
        s.load[n.node_id] = typeof n.load?.cpu_load_1m === 'number' ? n.load.cpu_load_1m : null;
        s.age[n.node_id] = n.last_heartbeat_at ? Math.max(0, (now - Date.parse(n.last_heartbeat_at)) / 1000) : null;
      }
      samples.current.push(s);
      if (samples.current.length > 1800) samples.current.splice(0, samples.current.length - 1800);
      setSampled((x) => x + 1);
    };
    sample();
    const every = setInterval(sample, 2000);
    return () => clearInterval(every);
  }, [nodes]);

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
      b = { t, started: 0, completed: 0, failed: 0, p50_ms: null, p99_ms: null, tokens: 0, workflows_started: 0, workflows_finished: 0 };
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
  const nodeIds = [...nodes.keys()].sort().slice(0, COLORS.length);
  const ns = samples.current;
  const totals = rows.reduce((a, b) => ({ started: a.started + b.started, finished: a.finished + b.completed + b.failed, failed: a.failed + b.failed, tokens: a.tokens + b.tokens }), { started: 0, finished: 0, failed: 0, tokens: 0 });
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
        <div class="muted small">last 60 minutes · cost: no price table configured, tokens shown</div>
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
        <Chart
          testid="chart-node-load"
          title="Node load (1 min)"
          series={nodeIds.map((id, i) => ({ label: id, color: COLORS[i]! }))}
          data={[ns.map((s) => s.t), ...nodeIds.map((id) => ns.map((s) => s.load[id] ?? null))]}
        />
        <Chart
          testid="chart-heartbeat"
          title="Heartbeat age"
          unit="s"
          series={nodeIds.map((id, i) => ({ label: id, color: COLORS[i]! }))}
          data={[ns.map((s) => s.t), ...nodeIds.map((id) => ns.map((s) => s.age[id] ?? null))]}
        />
      </div>
    </div>
  );
}
