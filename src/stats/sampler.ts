// Per-minute samples for the dashboard's history charts (migration 095): every node's CPU, memory, event-loop delay,
// executions and heartbeat age (read from cluster_nodes, where heartbeats put them) and each tenant's executions
// waiting to start. Runs on every node that has the database (controllers and hybrids); two controllers sampling the
// same minute write one row (the later wins). Rows older than a day are deleted in bounded batches. A failed pass
// is logged and the next one tries again: the charts show a gap, nothing else depends on these rows.
import type { Logger } from '../logging/logger.ts';
import type { Queryable } from '../storage/db.ts';

const KEEP = `interval '1 day'`;
const PRUNE_BATCH = 5000;

/** One pass: this minute's samples, then a bounded prune of old ones. */
export async function samplePass(db: Queryable): Promise<{ nodes: number; tenants: number }> {
  const nodes = await db.query(
    `INSERT INTO node_samples (minute, node_id, status, cpu_percent, memory_percent, event_loop_delay_ms, active_executions, heartbeat_age_ms)
     SELECT date_trunc('minute', now()), node_id, status,
            (load->>'cpu_utilization_percent')::REAL, (load->>'memory_utilization_percent')::REAL,
            (load->>'event_loop_delay_ms')::REAL, (load->>'active_execution_count')::INT4,
            LEAST(EXTRACT(EPOCH FROM now() - last_heartbeat_at) * 1000, 2000000000)::INT4
     FROM cluster_nodes WHERE status <> 'DEREGISTERED'
     ON CONFLICT (minute, node_id) DO UPDATE SET status = excluded.status, cpu_percent = excluded.cpu_percent,
       memory_percent = excluded.memory_percent, event_loop_delay_ms = excluded.event_loop_delay_ms,
       active_executions = excluded.active_executions, heartbeat_age_ms = excluded.heartbeat_age_ms, recorded_at = now()`,
  );
  const tenants = await db.query(
    `INSERT INTO queue_samples (tenant_id, minute, pending)
     SELECT tenant_id, date_trunc('minute', now()), count(*)::INT4 FROM executions WHERE status = 'pending' GROUP BY tenant_id
     ON CONFLICT (tenant_id, minute) DO UPDATE SET pending = excluded.pending, recorded_at = now()`,
  );
  await db.query(
    `DELETE FROM node_samples WHERE (minute, node_id) IN (SELECT minute, node_id FROM node_samples WHERE minute < now() - ${KEEP} LIMIT ${PRUNE_BATCH})`,
  );
  await db.query(
    `DELETE FROM queue_samples WHERE (tenant_id, minute) IN (SELECT tenant_id, minute FROM queue_samples WHERE minute < now() - ${KEEP} LIMIT ${PRUNE_BATCH})`,
  );
  return { nodes: nodes.rowCount, tenants: tenants.rowCount };
}

export interface StatsSampler {
  stop(): Promise<void>;
}

/**
 * Samples after `firstAfterMs` (default at once), then every `everyMs` (default a minute). A node starting passes a
 * delay: PGlite runs its queries on the node's main thread, and the first sample's four statements (the first use
 * of their tables) ran in the middle of the start, ~0.2-0.4 s before the node could answer (issue 15 item 4).
 */
export function startStatsSampler(db: Queryable, logger: Logger, everyMs = 60_000, firstAfterMs = 0): StatsSampler {
  const log = logger.child({ component: 'stats-sampler' });
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const tick = (): void => {
    running = samplePass(db)
      .then(() => undefined)
      .catch((err: unknown) => log.warn({ err }, 'stats sample failed; the next one tries again'))
      .finally(() => {
        if (!stopped) {
          timer = setTimeout(tick, everyMs);
          timer.unref();
        }
      });
  };
  if (firstAfterMs > 0) {
    timer = setTimeout(tick, firstAfterMs);
    timer.unref();
  } else tick();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
