-- 019: room on each page of workflow_executions for the new versions of its rows. Never edit once committed.
-- Every workflow step rewrites its run's row (status, blackboard, visits, last_seq ...). With full pages the new
-- version lands on another page, and all four indexes of the table get a new entry for it; with free space on the
-- page PostgreSQL writes a heap-only tuple (HOT: no index entries, less WAL) and prunes the old versions in place.
-- Measured on the workflow race (docs/BENCHMARKS.md): HOT updates went from about 30% to about 80% of the updates.
-- CockroachDB accepts the parameter and ignores it (it stores rows in its own engine); PGlite applies it.
ALTER TABLE workflow_executions SET (fillfactor = 50);
