// Leases on named resources with epoch fencing (DESIGN.md, rule 3). The `epoch` of a resource only ever grows: it
// moves when the lease changes hands or is taken again after it expired, and every fenced write checks it inside
// the writer's own transaction, so a node that lost its lease (paused, partitioned, slow) cannot write.
// Expiry is judged by the database clock (now()), never by the nodes' clocks.
import { Errors, OrchError } from '../errors/catalog.ts';
import type { QueryResult, Queryable, Row } from './db.ts';
import { expiresIn, ttlParam } from './sql-ident.ts';

export interface Lease {
  resource: string;
  nodeId: string;
  epoch: number;
  /** When the lease runs out by the database clock, unless renewed. */
  expiresAt: Date;
}

interface LeaseRow {
  resource: string;
  owner_node: string;
  epoch: number;
  lease_expires_at: Date;
}

function toLease(row: LeaseRow): Lease {
  return { resource: row.resource, nodeId: row.owner_node, epoch: row.epoch, expiresAt: row.lease_expires_at };
}

export function leaseLost(lease: Lease): OrchError {
  return new OrchError(Errors.LEASE_LOST, `lease on ${lease.resource} lost by ${lease.nodeId} (epoch ${lease.epoch})`, {
    details: { resource: lease.resource, epoch: lease.epoch },
  });
}

/**
 * Takes `resource` for `nodeId` when it is free, expired, or already held by `nodeId`; answers null when another
 * node holds it. Holding it already (and unexpired) keeps the epoch, so calling this again acts as a renewal;
 * taking it over from another node, or again after it expired, bumps the epoch.
 */
export async function acquireLease(db: Queryable, resource: string, nodeId: string, ttlMs: number): Promise<Lease | null> {
  const res = await db.query<LeaseRow>(
    `INSERT INTO leases AS l (resource, owner_node, epoch, lease_expires_at)
     VALUES ($1, $2, 1, ${expiresIn(3)})
     ON CONFLICT (resource) DO UPDATE SET
       epoch = CASE WHEN l.owner_node = excluded.owner_node AND l.lease_expires_at >= now()
                    THEN l.epoch ELSE l.epoch + 1 END,
       owner_node = excluded.owner_node,
       lease_expires_at = excluded.lease_expires_at
     WHERE l.owner_node = excluded.owner_node OR l.lease_expires_at < now()
     RETURNING resource, owner_node, epoch, lease_expires_at`,
    [resource, nodeId, ttlParam(ttlMs)],
  );
  const row = res.rows[0];
  return row ? toLease(row) : null;
}

/**
 * Extends a lease this node still holds at the same epoch; fails with LEASE_LOST once someone else has taken it.
 * A lease that expired but was not taken yet can still be renewed: nobody else can have written in between.
 */
export async function renewLease(db: Queryable, lease: Lease, ttlMs: number): Promise<Lease> {
  const res = await db.query<LeaseRow>(
    `UPDATE leases SET lease_expires_at = ${expiresIn(4)}
     WHERE resource = $1 AND owner_node = $2 AND epoch = $3
     RETURNING resource, owner_node, epoch, lease_expires_at`,
    [lease.resource, lease.nodeId, lease.epoch, ttlParam(ttlMs)],
  );
  const row = res.rows[0];
  if (!row) throw leaseLost(lease);
  return toLease(row);
}

/**
 * Gives the lease up so that another node can take it at once. The row stays (expired) rather than being deleted,
 * so that the next holder gets a higher epoch and this one's epoch is never handed out again. Answers false when
 * the lease had already been lost.
 */
export async function releaseLease(db: Queryable, lease: Lease): Promise<boolean> {
  const res = await db.query(
    `UPDATE leases SET lease_expires_at = now() - INTERVAL '1 second'
     WHERE resource = $1 AND owner_node = $2 AND epoch = $3`,
    [lease.resource, lease.nodeId, lease.epoch],
  );
  return res.rowCount > 0;
}

/** The current holder of a resource, expired or not; null when it was never leased. */
export async function getLease(db: Queryable, resource: string): Promise<(Lease & { live: boolean }) | null> {
  const res = await db.query<LeaseRow & { live: boolean }>(
    `SELECT resource, owner_node, epoch, lease_expires_at, lease_expires_at >= now() AS live
     FROM leases WHERE resource = $1`,
    [resource],
  );
  const row = res.rows[0];
  return row ? { ...toLease(row), live: row.live } : null;
}

/**
 * The fence: inside the caller's transaction, checks that `lease` is still this node's at the same epoch and locks
 * the lease row until the transaction ends, so that no takeover can slip in between this check and the commit.
 * Throws LEASE_LOST otherwise; the caller's transaction then rolls back and nothing it wrote survives.
 */
export async function assertLease(tx: Queryable, lease: Lease): Promise<void> {
  const res = await tx.query<{ owner_node: string; epoch: number }>(
    'SELECT owner_node, epoch FROM leases WHERE resource = $1 FOR UPDATE',
    [lease.resource],
  );
  const row = res.rows[0];
  if (!row || row.owner_node !== lease.nodeId || row.epoch !== lease.epoch) throw leaseLost(lease);
}

/** Runs one statement only if `lease` still holds (see assertLease); use it inside db.tx. */
export async function fencedWrite<R extends object = Row>(
  tx: Queryable,
  lease: Lease,
  sql: string,
  params?: readonly unknown[],
): Promise<QueryResult<R>> {
  await assertLease(tx, lease);
  return tx.query<R>(sql, params);
}
