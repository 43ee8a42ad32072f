// The last hour of a tenant's work in per-minute buckets, for the dashboard's charts (GET /v1/stats/history): agent
// executions started, completed and failed, p50 / p99 duration of those that finished, model tokens and their cost
// (the price table, pricing.ts), workflow runs started and finished, executions waiting to start (queue depth), and
// per node CPU, memory, event-loop delay, executions and heartbeat age (the sampler's rows, sampler.ts). Read-only
// aggregates over indexed rows; the live feed adds what happens after the page loaded.
import type { Queryable } from '../storage/db.ts';
import { Errors, OrchError } from '../errors/catalog.ts';
import { PriceTable, round6 } from './pricing.ts';

export interface StatsBucket {
  /** Start of the minute, epoch seconds. */
  t: number;
  started: number;
  completed: number;
  failed: number;
  p50_ms: number | null;
  p99_ms: number | null;
  tokens: number;
  workflows_started: number;
  workflows_finished: number;
  /** Cost of the tokens of executions that finished this minute, of the models with a price; null: no price table. */
  cost: number | null;
  /** The tenant's executions waiting to start (pending) when the minute was sampled; null: not sampled. */
  queue_depth: number | null;
}

/** One node's sample of a minute (sampler.ts). */
export interface NodeSample {
  t: number;
  status: string;
  cpu_percent: number | null;
  memory_percent: number | null;
  event_loop_delay_ms: number | null;
  active_executions: number | null;
  heartbeat_age_s: number | null;
}

export interface StatsHistory {
  minutes: number;
  currency: string;
  /** Whether a price table is configured (config spec.pricing). */
  priced: boolean;
  buckets: StatsBucket[];
  /** Per node, its samples in the window (oldest first). Cluster members are not tenant data: every caller sees them. */
  nodes: Array<{ node_id: string; samples: NodeSample[] }>;
}

export function checkMinutes(minutes: number): void {
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > 24 * 60) throw new OrchError(Errors.BAD_REQUEST, 'minutes must be an integer from 1 to 1440');
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export class StatsService {
  constructor(
    private readonly db: Queryable,
    readonly prices: PriceTable = new PriceTable(undefined),
  ) {}

  async history(tenant: string, minutes = 60): Promise<StatsHistory> {
    checkMinutes(minutes);
    const res = await this.db.query<{ t: string; started: number; completed: number; failed: number; p50: number | null; p99: number | null; tokens: string; wf_started: number; wf_finished: number }>(
      `WITH span AS (
         SELECT generate_series(date_trunc('minute', now()) - ($2::INT - 1) * interval '1 minute', date_trunc('minute', now()), interval '1 minute') AS m
       ),
       started AS (
         SELECT date_trunc('minute', created_at) AS m, count(*)::INT4 AS n
         FROM executions WHERE tenant_id = $1 AND created_at >= date_trunc('minute', now()) - ($2::INT - 1) * interval '1 minute' GROUP BY 1
       ),
       finished AS (
         SELECT date_trunc('minute', completed_at) AS m,
                count(*) FILTER (WHERE status = 'completed')::INT4 AS completed,
                count(*) FILTER (WHERE status = 'failed')::INT4 AS failed,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM completed_at - COALESCE(started_at, created_at)) * 1000) AS p50,
                percentile_cont(0.99) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM completed_at - COALESCE(started_at, created_at)) * 1000) AS p99,
                sum(prompt_tokens + completion_tokens)::BIGINT AS tokens
         FROM executions WHERE tenant_id = $1 AND completed_at >= date_trunc('minute', now()) - ($2::INT - 1) * interval '1 minute' GROUP BY 1
       ),
       wf_started AS (
         SELECT date_trunc('minute', created_at) AS m, count(*)::INT4 AS n
         FROM workflow_executions WHERE tenant_id = $1 AND created_at >= date_trunc('minute', now()) - ($2::INT - 1) * interval '1 minute' GROUP BY 1
       ),
       wf_finished AS (
         SELECT date_trunc('minute', completed_at) AS m, count(*)::INT4 AS n
         FROM workflow_executions WHERE tenant_id = $1 AND completed_at >= date_trunc('minute', now()) - ($2::INT - 1) * interval '1 minute' GROUP BY 1
       )
       SELECT EXTRACT(EPOCH FROM span.m)::BIGINT::TEXT AS t,
              COALESCE(started.n, 0) AS started, COALESCE(finished.completed, 0) AS completed, COALESCE(finished.failed, 0) AS failed,
              finished.p50, finished.p99, COALESCE(finished.tokens, 0)::TEXT AS tokens,
              COALESCE(wf_started.n, 0) AS wf_started, COALESCE(wf_finished.n, 0) AS wf_finished
       FROM span
       LEFT JOIN started ON started.m = span.m
       LEFT JOIN finished ON finished.m = span.m
       LEFT JOIN wf_started ON wf_started.m = span.m
       LEFT JOIN wf_finished ON wf_finished.m = span.m
       ORDER BY span.m`,
      [tenant, minutes],
    );
    const [costs, queue, nodes] = await Promise.all([this.costByMinute(tenant, minutes), this.queueByMinute(tenant, minutes), this.nodeSamples(minutes)]);
    return {
      minutes,
      currency: this.prices.currency,
      priced: this.prices.configured,
      nodes,
      buckets: res.rows.map((r) => ({
        t: Number(r.t),
        started: Number(r.started),
        completed: Number(r.completed),
        failed: Number(r.failed),
        p50_ms: r.p50 === null ? null : Math.round(Number(r.p50)),
        p99_ms: r.p99 === null ? null : Math.round(Number(r.p99)),
        tokens: Number(r.tokens),
        workflows_started: Number(r.wf_started),
        workflows_finished: Number(r.wf_finished),
        cost: this.prices.configured ? (costs.get(Number(r.t)) ?? 0) : null,
        queue_depth: queue.sampled.has(Number(r.t)) ? (queue.pending.get(Number(r.t)) ?? 0) : null,
      })),
    };
  }

  /** Cost per minute (epoch s) of the executions that finished in it, by model. */
  private async costByMinute(tenant: string, minutes: number): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    if (!this.prices.configured) return out;
    const res = await this.db.query<{ t: string; model: string | null; prompt: string; completion: string }>(
      `SELECT EXTRACT(EPOCH FROM date_trunc('minute', completed_at))::BIGINT::TEXT AS t, manifest->'spec'->'runtime'->>'model' AS model,
              sum(prompt_tokens)::BIGINT::TEXT AS prompt, sum(completion_tokens)::BIGINT::TEXT AS completion
       FROM executions WHERE tenant_id = $1 AND completed_at >= date_trunc('minute', now()) - ($2::INT - 1) * interval '1 minute'
       GROUP BY 1, 2`,
      [tenant, minutes],
    );
    for (const r of res.rows) {
      const c = this.prices.cost(r.model, Number(r.prompt), Number(r.completion));
      if (c !== null) out.set(Number(r.t), round6((out.get(Number(r.t)) ?? 0) + c));
    }
    return out;
  }

  /** The tenant's pending executions per sampled minute; `sampled`: the minutes the sampler ran (any node row). */
  private async queueByMinute(tenant: string, minutes: number): Promise<{ pending: Map<number, number>; sampled: Set<number> }> {
    const from = `date_trunc('minute', now()) - ($1::INT - 1) * interval '1 minute'`;
    const [pending, sampled] = await Promise.all([
      this.db.query<{ t: string; pending: number }>(
        `SELECT EXTRACT(EPOCH FROM minute)::BIGINT::TEXT AS t, pending FROM queue_samples WHERE tenant_id = $2 AND minute >= ${from}`,
        [minutes, tenant],
      ),
      this.db.query<{ t: string }>(`SELECT DISTINCT EXTRACT(EPOCH FROM minute)::BIGINT::TEXT AS t FROM node_samples WHERE minute >= ${from}`, [minutes]),
    ]);
    return { pending: new Map(pending.rows.map((r) => [Number(r.t), Number(r.pending)])), sampled: new Set(sampled.rows.map((r) => Number(r.t))) };
  }

  private async nodeSamples(minutes: number): Promise<StatsHistory['nodes']> {
    const res = await this.db.query<{
      t: string;
      node_id: string;
      status: string;
      cpu_percent: number | null;
      memory_percent: number | null;
      event_loop_delay_ms: number | null;
      active_executions: number | null;
      heartbeat_age_ms: number | null;
    }>(
      `SELECT EXTRACT(EPOCH FROM minute)::BIGINT::TEXT AS t, node_id, status, cpu_percent, memory_percent, event_loop_delay_ms, active_executions, heartbeat_age_ms
       FROM node_samples WHERE minute >= date_trunc('minute', now()) - ($1::INT - 1) * interval '1 minute'
       ORDER BY node_id, minute LIMIT 20000`,
      [minutes],
    );
    const by = new Map<string, NodeSample[]>();
    for (const r of res.rows) {
      let list = by.get(r.node_id);
      if (!list) by.set(r.node_id, (list = []));
      list.push({
        t: Number(r.t),
        status: r.status,
        cpu_percent: num(r.cpu_percent),
        memory_percent: num(r.memory_percent),
        event_loop_delay_ms: num(r.event_loop_delay_ms),
        active_executions: num(r.active_executions),
        heartbeat_age_s: r.heartbeat_age_ms === null ? null : Math.round(Number(r.heartbeat_age_ms) / 100) / 10,
      });
    }
    return [...by].map(([node_id, samples]) => ({ node_id, samples }));
  }
}
