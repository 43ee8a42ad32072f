// The last hour of a tenant's work in per-minute buckets, for the dashboard's charts (GET /v1/stats/history): agent
// executions started, completed and failed, p50 / p99 duration of those that finished, model tokens, and workflow
// runs started and finished. Read-only aggregates over the executions and workflow_executions rows (indexed by
// tenant and created_at); the live feed adds what happens after the page loaded.
import type { Queryable } from '../storage/db.ts';
import { Errors, OrchError } from '../errors/catalog.ts';

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
}

export interface StatsHistory {
  minutes: number;
  buckets: StatsBucket[];
}

export class StatsService {
  constructor(private readonly db: Queryable) {}

  async history(tenant: string, minutes = 60): Promise<StatsHistory> {
    if (!Number.isInteger(minutes) || minutes < 1 || minutes > 24 * 60) throw new OrchError(Errors.BAD_REQUEST, 'minutes must be an integer from 1 to 1440');
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
    return {
      minutes,
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
      })),
    };
  }
}
