-- 022: room for updates and earlier vacuums on the write-heavy tables (issue 23). Never edit once committed.
--
-- fillfactor leaves free space on each page, so an UPDATE that changes no indexed column writes a heap-only tuple
-- (HOT: no new index entries) on the same page and PostgreSQL prunes the old versions in place. CockroachDB accepts
-- fillfactor and ignores it (019 does the same for workflow_executions). Rows updated many times in their life:
-- executions (status, iteration, tokens per iteration), cluster_nodes (every heartbeat), approvals (once, resolved).
ALTER TABLE executions SET (fillfactor = 70);
ALTER TABLE cluster_nodes SET (fillfactor = 50);

-- Autovacuum per table: the defaults (vacuum at 20% dead rows, analyze at 10% changed) let a table that holds a long
-- history gather millions of dead row versions before a vacuum, and plan with statistics from long ago. These tables
-- are vacuumed at 2% dead (at least 1,000 rows), analyzed at 5% changed, insert-only growth vacuumed at 5% (so
-- the visibility map, index-only scans and the retention's deletes stay cheap), and without the cost delay that
-- makes vacuum of a busy table fall behind its writers.
-- PostgreSQL only: CockroachDB has no autovacuum (its MVCC garbage collection is per range) and refuses these storage
-- parameters, so migrate.ts skips a statement marked `-- postgresql-only` there (docs/COCKROACH.md).
-- postgresql-only
ALTER TABLE workflow_executions SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 0);
-- postgresql-only
ALTER TABLE workflow_events SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 0);
-- postgresql-only
ALTER TABLE executions SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 0);
-- postgresql-only
ALTER TABLE execution_events SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 0);
-- postgresql-only
ALTER TABLE cluster_nodes SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 200,
  autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 0);
-- postgresql-only
ALTER TABLE stimuli SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_insert_scale_factor = 0.05);
