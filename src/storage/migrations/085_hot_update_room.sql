-- 085: room for HOT updates on two more tables whose rows are rewritten many times (issue 23). Never edit once committed.
--
-- As 022 did for executions and cluster_nodes: free space on each page lets an UPDATE that changes no indexed column
-- write a heap-only tuple on the same page (no new index entries; old versions pruned in place).
--   volumes: used_bytes and updated_at change with every FSAL write (the quota reservation, src/volumes/repo.ts).
--   leases: lease_expires_at changes with every renewal of every held resource (src/storage/lease.ts).
-- Measured with `npm run bench -- hot-updates --tables volumes,leases` (docs/BENCHMARKS.md): volumes 77% -> 97% HOT,
-- leases 89% -> 100%. The setting applies to pages written from now on. CockroachDB accepts fillfactor and ignores it.
ALTER TABLE volumes SET (fillfactor = 70);
ALTER TABLE leases SET (fillfactor = 50);

-- Vacuumed early and without the cost delay (PostgreSQL only, docs/COCKROACH.md): small tables of hot rows, where the
-- default (20% dead) lets every live row carry a chain of dead versions between vacuums.
-- postgresql-only
ALTER TABLE volumes SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 200,
  autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 0);
-- postgresql-only
ALTER TABLE leases SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 200, autovacuum_vacuum_cost_delay = 0);
