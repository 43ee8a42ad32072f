// A database that has been in use for a while: the hot tables loaded with history (mostly terminal rows, a few live
// ones held by another node, dead row versions from updates), then ANALYZEd, so a test sees the plans PostgreSQL
// makes for a big table. Bulk loaded with generate_series (a few seconds), never row by row.
import type { Queryable } from '../../src/storage/db.ts';

export interface HistorySize {
  /** workflow_executions rows (2% live, owned by `otherNode` with a lease a day long); each has `eventsPerRun` events. */
  runs: number;
  eventsPerRun: number;
  /** executions rows (1% pending, owned by `otherNode`), 3 events each; also the size of stimuli, stimulus_keys,
   * approvals and cluster_nodes (DEREGISTERED members, plus 50 ACTIVE ones owned by `otherNode`). */
  rows: number;
  tenant: string;
  otherNode: string;
}

/** Tables the load makes large: a hot statement must not read any of them whole. */
export const LOADED_TABLES = ['workflow_executions', 'workflow_events', 'executions', 'execution_events', 'cluster_nodes', 'stimuli', 'stimulus_keys', 'approvals'] as const;

export async function loadHistory(db: Queryable, s: HistorySize): Promise<void> {
  const p = [s.tenant, s.otherNode];
  await db.query(
    `INSERT INTO workflow_executions (id, tenant_id, workflow_id, workflow_name, workflow_version, manifest, input, status, current_state,
       blackboard, context, visits, total_transitions, ancestry, last_seq, owner_node, lease_expires_at, epoch, created_at, started_at,
       last_transition_at, completed_at, updated_at)
     SELECT md5('run' || g)::UUID, $1, md5('wf')::UUID::TEXT, 'history', '1.0.0', '{"spec": {"initial_state": "s0", "states": {}}}', '{}',
       CASE WHEN g % 50 = 0 THEN 'running' ELSE 'completed' END, 's1', '{"v": 1}', '{}', '{"s0": 1}', 2, '[]', ${s.eventsPerRun},
       CASE WHEN g % 50 = 0 THEN $2 END, CASE WHEN g % 50 = 0 THEN now() + INTERVAL '1 day' END, 1,
       t, t, t, CASE WHEN g % 50 = 0 THEN NULL ELSE t END, t
     FROM (SELECT g, now() - INTERVAL '1 hour' - (g * INTERVAL '1 second') AS t FROM generate_series(1, ${s.runs}) g) x`,
    p,
  );
  await db.query(
    `INSERT INTO workflow_events (execution_id, seq, type, event_key, state_name, iteration_number, payload, recorded_at)
     SELECT md5('run' || g)::UUID, e, 'WorkflowStateEntered', 'entered:' || e, 's' || e, 1, '{}', now() - (g * INTERVAL '1 second')
     FROM generate_series(1, ${s.runs}) g, generate_series(1, ${s.eventsPerRun}) e`,
  );
  // Dead row versions: a fifth of the terminal runs rewritten once, as steps and cancels do.
  await db.query(`UPDATE workflow_executions SET updated_at = now() WHERE status = 'completed' AND total_transitions = 2 AND (hashtext(id::TEXT) % 5) = 0`);
  await db.query(
    `INSERT INTO executions (id, tenant_id, agent_id, agent_name, agent_version, manifest, input, status, owner_node, lease_expires_at, epoch,
       created_at, started_at, completed_at, updated_at)
     SELECT md5('exec' || g)::UUID, $1, md5('agent')::UUID, 'history', '1.0.0', '{}', 'hi',
       CASE WHEN g % 100 = 0 THEN 'pending' ELSE 'completed' END, CASE WHEN g % 100 = 0 THEN $2 END,
       CASE WHEN g % 100 = 0 THEN now() + INTERVAL '1 day' END, 1, t, t, CASE WHEN g % 100 = 0 THEN NULL ELSE t END, t
     FROM (SELECT g, now() - INTERVAL '1 hour' - (g * INTERVAL '1 second') AS t FROM generate_series(1, ${s.rows}) g) x`,
    p,
  );
  await db.query(
    `INSERT INTO execution_events (execution_id, seq, type, event_key, payload)
     SELECT md5('exec' || g)::UUID, e, 'iteration_started', 'it:' || e, '{}' FROM generate_series(1, ${s.rows}) g, generate_series(1, 3) e`,
  );
  await db.query(`UPDATE executions SET updated_at = now() WHERE status = 'completed' AND (hashtext(id::TEXT) % 5) = 0`);
  await db.query(
    `INSERT INTO cluster_nodes (node_id, role, status, registered_at, last_heartbeat_at, owner_node, lease_expires_at, epoch, updated_at)
     SELECT 'gone-' || g, 'worker', 'DEREGISTERED', now() - INTERVAL '1 day', now() - INTERVAL '1 day', NULL, NULL, 1, now() - INTERVAL '1 day'
     FROM generate_series(1, ${s.rows}) g
     UNION ALL
     SELECT 'live-' || g, 'worker', 'ACTIVE', now(), now(), $1, now() + INTERVAL '1 day', 1, now() FROM generate_series(1, 50) g`,
    [s.otherNode],
  );
  await db.query(
    `INSERT INTO stimuli (id, tenant_id, source, idempotency_key, content, headers, status, routed_by, workflow_name, workflow_execution_id, created_at, updated_at)
     SELECT md5('stim' || g)::UUID, $1, 'hook', 'key-' || g, '{}', '{}', 'routed', 'route', 'history', md5('run' || g)::UUID,
       now() - (g * INTERVAL '1 second'), now() - (g * INTERVAL '1 second')
     FROM generate_series(1, ${s.rows}) g`,
    [s.tenant],
  );
  await db.query(
    `INSERT INTO stimulus_keys (tenant_id, source, idempotency_key, stimulus_id, expires_at)
     SELECT $1, 'hook', 'key-' || g, md5('stim' || g)::UUID, now() - (g * INTERVAL '1 second') FROM generate_series(1, ${s.rows}) g`,
    [s.tenant],
  );
  await db.query(
    `INSERT INTO approvals (id, tenant_id, workflow_execution_id, state_name, visit, prompt, timeout_seconds, deadline, status, created_at, resolved_at)
     SELECT md5('appr' || g)::UUID, $1, md5('run' || g)::UUID, 'review', 1, 'ok?', 60,
       now() + CASE WHEN g % 200 = 0 THEN INTERVAL '1 hour' ELSE -INTERVAL '1 day' END,
       CASE WHEN g % 200 = 0 THEN 'pending' ELSE 'approved' END, now() - INTERVAL '1 day',
       CASE WHEN g % 200 = 0 THEN NULL ELSE now() - INTERVAL '1 day' + (g % 3600) * INTERVAL '1 second' END
     FROM generate_series(1, ${s.rows}) g`,
    [s.tenant],
  );
  for (const t of LOADED_TABLES) await db.query(`ANALYZE ${t}`);
}
