-- 095: per-minute samples behind the dashboard's node and queue charts (issue 22, src/stats/sampler.ts). Never edit
-- once committed. One row per node per minute (CPU, memory, event-loop delay, executions, heartbeat age) and one per
-- tenant per minute with executions waiting to start (pending). Written by every controller's sampler (the same
-- minute twice is one row: the later write wins); rows older than a day are deleted in bounded batches.
CREATE TABLE node_samples (
  minute TIMESTAMPTZ NOT NULL,
  node_id TEXT NOT NULL,
  status TEXT NOT NULL,
  cpu_percent REAL,
  memory_percent REAL,
  event_loop_delay_ms REAL,
  active_executions INT4,
  heartbeat_age_ms INT4,
  recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (minute, node_id)
);

CREATE TABLE queue_samples (
  tenant_id TEXT NOT NULL,
  minute TIMESTAMPTZ NOT NULL,
  pending INT4 NOT NULL,
  recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, minute)
);
CREATE INDEX queue_samples_minute ON queue_samples (minute);
