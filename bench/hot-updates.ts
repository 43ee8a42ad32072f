// HOT updates before and after 022's fillfactor (issue 23): the share of updates PostgreSQL writes as heap-only tuples
// (no new index entries, old versions pruned on the page) on the tables whose rows are rewritten many times in their
// life. A private PostgreSQL server, the schema migrated; per table, the same rows and the same update statements once
// with fillfactor 100 (PostgreSQL's default, what the table had before 022) and once with the migration's setting.
//
//   npm run bench -- hot-updates [--rows 5000] [--rounds 20] [--tables executions,volumes]
import pg from 'pg';
import { silentLogger } from '../src/logging/logger.ts';
import { migrate } from '../src/storage/migrate.ts';
import { openPg } from '../src/storage/pg.ts';
import { startPrivatePg } from './private-pg.ts';

interface Case {
  table: string;
  /** The migration's setting, and which migration. */
  fillfactor: number;
  migration: string;
  load: (rows: number) => string;
  /** One round of the updates the code makes (an execution's iteration; a heartbeat of every member); `$round` is the round. */
  update: string;
  /** The rows `from`..`to` (1-based) of the load. */
  rowsWhere: (from: number, to: number) => string;
}

const byUuid = (from: number, to: number): string => `id IN (SELECT md5('x' || g)::UUID FROM generate_series(${from}, ${to}) g)`;

const CASES: Case[] = [
  {
    table: 'executions',
    fillfactor: 70,
    migration: '022',
    rowsWhere: byUuid,
    load: (rows) => `INSERT INTO executions (id, tenant_id, agent_id, agent_name, agent_version, manifest, input, status, owner_node, epoch)
      SELECT md5('x' || g)::UUID, 't', md5('a')::UUID, 'a', '1', '{"spec": {}}', repeat('input ', 40), 'running', 'n', 1 FROM generate_series(1, ${rows}) g`,
    update: `UPDATE executions SET iteration = iteration + 1, prompt_tokens = prompt_tokens + 100, completion_tokens = completion_tokens + 50,
      lease_expires_at = now() + INTERVAL '30 seconds', updated_at = now()`,
  },
  {
    table: 'cluster_nodes',
    fillfactor: 50,
    migration: '022',
    rowsWhere: (from, to) => `node_id IN (SELECT 'w-' || g FROM generate_series(${from}, ${to}) g)`,
    load: (rows) => `INSERT INTO cluster_nodes (node_id, role, status, owner_node, epoch, registered_at, session_id, peer_id)
      SELECT 'w-' || g, 'worker', 'ACTIVE', 'ctl', 1, now(), 's', 'p' FROM generate_series(1, ${rows}) g`,
    update: `UPDATE cluster_nodes SET last_heartbeat_at = now(), heartbeat_count = heartbeat_count + 1, load = '{"cpu": 0.5, "executions": 3}',
      heartbeat_stamp_ms = (extract(epoch FROM now()) * 1000)::INT8, heartbeat_nonce = md5(random()::TEXT), updated_at = now()`,
  },
  {
    // A workflow step (writer.ts): the run's whole mutable part, its blackboard growing by one entry per step.
    table: 'workflow_executions',
    fillfactor: 50,
    migration: '019',
    rowsWhere: byUuid,
    load: (rows) => `INSERT INTO workflow_executions (id, tenant_id, workflow_id, workflow_name, workflow_version, manifest, input, status, current_state,
        blackboard, context, visits, ancestry, owner_node, epoch)
      SELECT md5('x' || g)::UUID, 't', 'w', 'race', '1.0.0', '{"spec": {"states": {}}}', '{}', 'running', 's0', '{}', '{}', '{"s0": 1}', '[]', 'n', 1 FROM generate_series(1, ${rows}) g`,
    update: `UPDATE workflow_executions SET current_state = 's' || $round, blackboard = blackboard || jsonb_build_object('v' || $round, repeat('x', 20)),
      visits = visits || jsonb_build_object('s' || $round, 1), total_transitions = total_transitions + 1, last_seq = last_seq + 2,
      last_transition_at = now(), updated_at = now()`,
  },
  {
    // The quota reservation of every FSAL write (src/volumes/repo.ts).
    table: 'volumes',
    fillfactor: 70,
    migration: '085',
    rowsWhere: byUuid,
    load: (rows) => `INSERT INTO volumes (id, tenant_id, label, storage_class, size_limit_bytes, used_bytes, owner_subject, owner_kind, owner_ref, node_id, status)
      SELECT md5('x' || g)::UUID, 't', 'vol-' || g, 'ephemeral', 1073741824, 0, 'user:someone', 'execution', md5('e' || g), 'n', 'active' FROM generate_series(1, ${rows}) g`,
    update: `UPDATE volumes SET used_bytes = used_bytes + 4096, updated_at = now()`,
  },
  {
    // A lease renewal (src/storage/lease.ts): every held resource, every few seconds.
    table: 'leases',
    fillfactor: 50,
    migration: '085',
    rowsWhere: (from, to) => `resource IN (SELECT 'r-' || g FROM generate_series(${from}, ${to}) g)`,
    load: (rows) => `INSERT INTO leases (resource, owner_node, epoch, lease_expires_at) SELECT 'r-' || g, 'n', 1, now() FROM generate_series(1, ${rows}) g`,
    update: `UPDATE leases SET lease_expires_at = now() + INTERVAL '10 seconds'`,
  },
];

export async function benchHotUpdates(rows: number, rounds: number, out: (line: string) => void, only?: string[]): Promise<void> {
  const server = await startPrivatePg();
  try {
    out('| table | fillfactor | updates | HOT updates | HOT % | table size after |');
    out('|---|---|---|---|---|---|');
    for (const c of CASES.filter((k) => !only?.length || only.includes(k.table))) {
      for (const ff of [100, c.fillfactor]) {
        const url = await server.createDatabase(`hot_${c.table}_${ff}`);
        const db = await openPg(url, { logger: silentLogger() });
        await migrate(db, silentLogger());
        await db.close();
        const cl = new pg.Client({ connectionString: url });
        await cl.connect();
        try {
          await cl.query(`ALTER TABLE ${c.table} SET (fillfactor = ${ff})`);
          await cl.query(c.load(rows));
          await cl.query(`VACUUM ANALYZE ${c.table}`);
          await cl.query('SELECT pg_stat_reset()');
          // One update of every row per round, in batches of 100 rows (as heartbeats and iterations come).
          for (let r = 0; r < rounds; r++) {
            for (let from = 0; from < rows; from += 100) {
              await cl.query(`${c.update.replaceAll('$round', String(r + 1))} WHERE ${c.rowsWhere(from + 1, from + 100)}`);
            }
          }
          await cl.query('SELECT pg_stat_force_next_flush()');
          await new Promise((res) => setTimeout(res, 1500));
          const s = (await cl.query<{ upd: string; hot: string; size: string }>(
            `SELECT n_tup_upd::TEXT AS upd, n_tup_hot_upd::TEXT AS hot, pg_size_pretty(pg_total_relation_size('${c.table}')) AS size FROM pg_stat_user_tables WHERE relname = $1`,
            [c.table],
          )).rows[0]!;
          out(`| ${c.table} | ${ff}${ff === 100 ? ` (before ${c.migration})` : ` (${c.migration})`} | ${s.upd} | ${s.hot} | ${((100 * Number(s.hot)) / Math.max(1, Number(s.upd))).toFixed(0)} | ${s.size} |`);
        } finally {
          await cl.end();
        }
      }
    }
  } finally {
    await server.close();
  }
}
