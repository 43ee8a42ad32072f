// SQL for cluster_nodes, the row each NodePeerActor keeps. Every write after the claim is fenced by
// (owner_node, epoch): a node whose claim was taken over changes nothing and gets LEASE_LOST.
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { Queryable } from '../../storage/db.ts';

export type PeerStatus = 'ACTIVE' | 'DRAINING' | 'UNHEALTHY' | 'DEREGISTERED';

export interface NodeRow {
  node_id: string;
  role: string;
  status: PeerStatus;
  grpc_address: string | null;
  tags: string[] | null;
  capabilities: Record<string, unknown> | null;
  registered_at: Date | null;
  last_heartbeat_at: Date | null;
  heartbeat_count: number;
  load: Record<string, unknown> | null;
  owner_node: string | null;
  lease_expires_at: Date | null;
  epoch: number;
}

export interface Fence {
  nodeId: string;
  owner: string;
  epoch: number;
}

const COLUMNS = `node_id, role, status, grpc_address, tags, capabilities, registered_at, last_heartbeat_at,
  heartbeat_count, load, owner_node, lease_expires_at, epoch`;

/** Writes this node's own row: new, or back from DEREGISTERED; an existing live row keeps its status. */
export async function upsertSelf(
  db: Queryable,
  self: { nodeId: string; role: string; grpcAddress: string | null; tags: string[]; clusterAddress?: string | null },
): Promise<{ created: boolean }> {
  const res = await db.query<{ created: boolean }>(
    `INSERT INTO cluster_nodes (node_id, role, status, grpc_address, tags, registered_at, last_heartbeat_at,
       heartbeat_count, epoch, updated_at, cluster_address)
     VALUES ($1, $2, 'ACTIVE', $3, $4, now(), now(), 0, 0, now(), $5)
     ON CONFLICT (node_id) DO UPDATE SET
       role = excluded.role, grpc_address = excluded.grpc_address, tags = excluded.tags, cluster_address = excluded.cluster_address,
       status = CASE WHEN cluster_nodes.status IN ('DEREGISTERED', 'UNHEALTHY') THEN 'ACTIVE' ELSE cluster_nodes.status END,
       registered_at = CASE WHEN cluster_nodes.status = 'DEREGISTERED' THEN now() ELSE cluster_nodes.registered_at END,
       updated_at = now()
     RETURNING (heartbeat_count = 0 AND epoch = 0) AS created`,
    [self.nodeId, self.role, self.grpcAddress, JSON.stringify(self.tags), self.clusterAddress ?? null],
  );
  return { created: res.rows[0]?.created === true };
}

/** Non-terminal rows that `owner` may run actors for: unowned, already its own, or with an expired claim. */
export async function recoverableNodeIds(db: Queryable, owner: string): Promise<string[]> {
  const res = await db.query<{ node_id: string }>(
    `SELECT node_id FROM cluster_nodes
     WHERE status <> 'DEREGISTERED' AND (owner_node IS NULL OR owner_node = $1 OR lease_expires_at < now())
     ORDER BY node_id`,
    [owner],
  );
  return res.rows.map((r) => r.node_id);
}

export interface WatchableNode {
  node_id: string;
  owner_node: string | null;
}

/**
 * The rows the watch of `owner` looks after: every live row that is unowned, `owner`'s own, `owner`'s node row
 * itself (whoever holds it), or whose claim lapsed. A live actor of `owner` over a row missing here is stale (another
 * node holds that row now).
 */
export async function watchableNodes(db: Queryable, owner: string): Promise<WatchableNode[]> {
  const res = await db.query<WatchableNode>(
    `SELECT node_id, owner_node FROM cluster_nodes
     WHERE status <> 'DEREGISTERED' AND (owner_node IS NULL OR owner_node = $1 OR node_id = $1 OR lease_expires_at < now())
     ORDER BY node_id`,
    [owner],
  );
  return res.rows;
}

/**
 * Takes the row for `owner` with a new epoch, or answers null when another live owner holds it. A node always takes
 * its own row back (another controller may have watched it while it was down).
 */
export async function claimNode(db: Queryable, nodeId: string, owner: string, ttlMs: number): Promise<NodeRow | null> {
  const res = await db.query<NodeRow>(
    `UPDATE cluster_nodes
     SET owner_node = $2, epoch = epoch + 1, lease_expires_at = now() + ($3::INT * INTERVAL '1 millisecond'),
         updated_at = now()
     WHERE node_id = $1 AND status <> 'DEREGISTERED'
       AND (owner_node IS NULL OR owner_node = $2 OR lease_expires_at < now() OR node_id = $2)
     RETURNING ${COLUMNS}`,
    [nodeId, owner, Math.round(ttlMs)],
  );
  return res.rows[0] ?? null;
}

function lost(fence: Fence): OrchError {
  return new OrchError(Errors.LEASE_LOST, `lease on node ${fence.nodeId} lost (epoch ${fence.epoch})`);
}

async function fencedReturning(db: Queryable, fence: Fence, set: string, params: unknown[]): Promise<NodeRow> {
  const res = await db.query<NodeRow>(
    `UPDATE cluster_nodes SET ${set}, updated_at = now()
     WHERE node_id = $1 AND owner_node = $2 AND epoch = $3
     RETURNING ${COLUMNS}`,
    [fence.nodeId, fence.owner, fence.epoch, ...params],
  );
  const row = res.rows[0];
  if (!row) throw lost(fence);
  return row;
}

/**
 * This node's own heartbeat: count, time, load, and a longer claim. The status is left alone: an UNHEALTHY row
 * becomes ACTIVE through activateSelf, with its event. The load's `active_execution_count` (this node's pending and
 * running executions, as a worker reports its own) is counted by the same statement (issue 18, idle cost: it was a
 * statement of its own before every heartbeat).
 */
export function heartbeatSelf(db: Queryable, fence: Fence, ttlMs: number, load: Record<string, unknown>): Promise<NodeRow> {
  return fencedReturning(
    db,
    fence,
    `heartbeat_count = heartbeat_count + 1, last_heartbeat_at = now(),
     load = $5::JSONB || jsonb_build_object('active_execution_count',
       (SELECT count(*) FROM executions e WHERE e.owner_node = $1 AND e.status IN ('pending', 'running'))),
     lease_expires_at = now() + ($4::INT * INTERVAL '1 millisecond')`,
    [Math.round(ttlMs), JSON.stringify(load)],
  );
}

/** This node's own row from UNHEALTHY to ACTIVE under its fence; answers the previous status, or undefined. */
export async function activateSelf(db: Queryable, fence: Fence): Promise<PeerStatus | undefined> {
  const res = await db.query<{ status: PeerStatus }>(
    `UPDATE cluster_nodes SET status = 'ACTIVE', updated_at = now()
     WHERE node_id = $1 AND owner_node = $2 AND epoch = $3 AND status = 'UNHEALTHY' RETURNING status`,
    [fence.nodeId, fence.owner, fence.epoch],
  );
  return res.rows[0] ? 'UNHEALTHY' : undefined;
}

/** Extends the claim on a remote peer's row, which the controller owns while it watches the peer. */
export function renewClaim(db: Queryable, fence: Fence, ttlMs: number): Promise<NodeRow> {
  return fencedReturning(db, fence, `lease_expires_at = now() + ($4::INT * INTERVAL '1 millisecond')`, [
    Math.round(ttlMs),
  ]);
}

/**
 * Marks the peer UNHEALTHY when it is ACTIVE or DRAINING and its last heartbeat is older than `overdueMs`; answers
 * the status it had, or undefined when nothing changed. Fenced like every write after the claim.
 */
export async function markUnhealthyIfOverdue(db: Queryable, fence: Fence, overdueMs: number): Promise<PeerStatus | undefined> {
  const res = await db.query<{ previous: PeerStatus }>(
    `WITH prev AS (
       SELECT node_id, status FROM cluster_nodes
       WHERE node_id = $1 AND owner_node = $2 AND epoch = $3 AND status IN ('ACTIVE', 'DRAINING')
         AND (last_heartbeat_at IS NULL OR last_heartbeat_at < now() - ($4::INT * INTERVAL '1 millisecond'))
       FOR UPDATE)
     UPDATE cluster_nodes c SET status = 'UNHEALTHY', updated_at = now() FROM prev
     WHERE c.node_id = $1 AND c.node_id = prev.node_id
     RETURNING prev.status AS previous`,
    [fence.nodeId, fence.owner, fence.epoch, Math.round(overdueMs)],
  );
  return res.rows[0]?.previous;
}

/**
 * One tick of the controller's watch in one statement (issue 18, idle cost; it was three, every half heartbeat
 * period): renews the claims `owner` holds that ran down to half their lifetime, gives up its claims on rows that
 * were DEREGISTERED (answered as `released`), and answers the ACTIVE or DRAINING peers past their heartbeat deadline
 * (`overdue`). One UPDATE does both writes (CockroachDB refuses two modifications of one table in a statement); the
 * rows are locked SKIP LOCKED, so a row a heartbeat is writing is renewed or released on the next tick, and the
 * watch never queues behind heartbeats nor they behind it. `= ANY(ARRAY(...))`: the keys are gathered once and the
 * UPDATE finds them by primary key (issue 23). The overdue read sees the statement's snapshot, as a read just before.
 */
export async function watchTick(db: Queryable, owner: string, ttlMs: number, overdueMs: number): Promise<{ overdue: string[]; released: string[] }> {
  const res = await db.query<{ overdue: string[]; released: string[] }>(
    `WITH ch AS (
       UPDATE cluster_nodes
       SET owner_node = CASE WHEN status = 'DEREGISTERED' THEN NULL ELSE owner_node END,
           lease_expires_at = CASE WHEN status = 'DEREGISTERED' THEN NULL ELSE now() + ($2::INT * INTERVAL '1 millisecond') END
       WHERE node_id = ANY(ARRAY(
         SELECT node_id FROM cluster_nodes WHERE owner_node = $1 AND node_id <> $1
           AND (status = 'DEREGISTERED' OR lease_expires_at IS NULL OR lease_expires_at < now() + ($2::INT / 2 * INTERVAL '1 millisecond'))
         ORDER BY node_id FOR UPDATE SKIP LOCKED))
         AND owner_node = $1
       RETURNING node_id, status)
     SELECT ARRAY(SELECT node_id FROM ch WHERE status = 'DEREGISTERED') AS released,
       ARRAY(SELECT node_id FROM cluster_nodes
             WHERE owner_node = $1 AND node_id <> $1 AND status IN ('ACTIVE', 'DRAINING')
               AND (last_heartbeat_at IS NULL OR last_heartbeat_at < now() - ($3::INT * INTERVAL '1 millisecond'))) AS overdue`,
    [owner, Math.round(ttlMs), Math.round(overdueMs)],
  );
  const r = res.rows[0]!;
  return { overdue: r.overdue, released: r.released };
}

export function setStatus(db: Queryable, fence: Fence, status: PeerStatus): Promise<NodeRow> {
  return fencedReturning(db, fence, `status = $4`, [status]);
}

/** Gives the row up (graceful stop) so another controller can claim it at once. */
export async function releaseClaim(db: Queryable, fence: Fence): Promise<void> {
  await fencedReturning(db, fence, `owner_node = NULL, lease_expires_at = NULL`, []);
}

export async function getNode(db: Queryable, nodeId: string): Promise<NodeRow | null> {
  const res = await db.query<NodeRow>(`SELECT ${COLUMNS} FROM cluster_nodes WHERE node_id = $1`, [nodeId]);
  return res.rows[0] ?? null;
}

export async function listNodes(db: Queryable, status?: PeerStatus): Promise<NodeRow[]> {
  const res = status
    ? await db.query<NodeRow>(`SELECT ${COLUMNS} FROM cluster_nodes WHERE status = $1 ORDER BY node_id`, [status])
    : await db.query<NodeRow>(`SELECT ${COLUMNS} FROM cluster_nodes ORDER BY node_id`);
  return res.rows;
}
