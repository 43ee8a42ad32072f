// Fencing for rows that carry their own lease columns (owner_node TEXT, epoch INT, lease_expires_at TIMESTAMPTZ),
// like cluster_nodes or an execution row: the row itself says which node runs its actor. Same rules as lease.ts:
// the epoch only grows, expiry is judged by now(), and a write by a node whose claim was taken over changes nothing
// and fails with LEASE_LOST.
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Queryable, Row } from './db.ts';
import { expiresIn, ident, ttlParam } from './sql-ident.ts';

/** What a fenced write needs to know: which row, and the claim on it. */
export interface RowFence {
  table: string;
  keyColumn: string;
  key: string;
  nodeId: string;
  epoch: number;
}

export interface RowClaim<R extends object = Row> extends RowFence {
  expiresAt: Date;
  /** The whole row as the claim left it. */
  row: R;
}

export interface ClaimOptions {
  /** An extra SQL condition the row must meet, e.g. `status <> 'DEREGISTERED'` (trusted code only). */
  where?: string;
  /** Extra assignments made by the claim, e.g. `parked = FALSE` (trusted code only). */
  set?: string;
}

export function rowLost(fence: RowFence): OrchError {
  return new OrchError(
    Errors.LEASE_LOST,
    `claim on ${fence.table} ${fence.key} lost by ${fence.nodeId} (epoch ${fence.epoch})`,
    { details: { table: fence.table, key: fence.key, epoch: fence.epoch } },
  );
}

function toClaim<R extends object>(table: string, keyColumn: string, key: string, row: R): RowClaim<R> {
  const lease = row as { owner_node?: unknown; epoch?: unknown; lease_expires_at?: unknown };
  return {
    table,
    keyColumn,
    key,
    nodeId: lease.owner_node as string,
    epoch: lease.epoch as number,
    expiresAt: lease.lease_expires_at as Date,
    row,
  };
}

/**
 * Claims a row for `nodeId` when it is unowned, already `nodeId`'s, or its claim expired; null when another node
 * holds it. Every claim bumps the epoch, even by the same node: a claim starts a new incarnation (a restarted
 * process), and the previous incarnation must be fenced off. Extend a claim with renewRow, not by claiming again.
 */
export async function claimRow<R extends object = Row>(
  db: Queryable,
  table: string,
  keyColumn: string,
  key: string,
  nodeId: string,
  ttlMs: number,
  options: ClaimOptions = {},
): Promise<RowClaim<R> | null> {
  const extra = options.where ? ` AND (${options.where})` : '';
  const set = options.set ? `, ${options.set}` : '';
  const res = await db.query<R>(
    `UPDATE ${ident(table)}
     SET owner_node = $2, epoch = epoch + 1, lease_expires_at = ${expiresIn(3)}${set}
     WHERE ${ident(keyColumn)} = $1
       AND (owner_node IS NULL OR owner_node = $2 OR lease_expires_at IS NULL OR lease_expires_at < now())${extra}
     RETURNING *`,
    [key, nodeId, ttlParam(ttlMs)],
  );
  const row = res.rows[0];
  return row ? toClaim(table, keyColumn, key, row) : null;
}

/**
 * Updates the row only while `fence` holds (same owner, same epoch) and answers the updated row; throws LEASE_LOST
 * when it no longer does. `setSql` is the SET list with its own parameters as $1..$n; the fence's parameters are
 * appended after them.
 */
export async function fencedUpdate<R extends object = Row>(
  db: Queryable,
  fence: RowFence,
  setSql: string,
  params: readonly unknown[] = [],
): Promise<R> {
  const n = params.length;
  const res = await db.query<R>(
    `UPDATE ${ident(fence.table)} SET ${setSql}
     WHERE ${ident(fence.keyColumn)} = $${n + 1} AND owner_node = $${n + 2} AND epoch = $${n + 3}
     RETURNING *`,
    [...params, fence.key, fence.nodeId, fence.epoch],
  );
  const row = res.rows[0];
  if (!row) throw rowLost(fence);
  return row;
}

/**
 * fencedUpdate for a caller that does not need the row back: `RETURNING 1` instead of the whole row, which for an
 * execution carries its manifest and input — parsing that on every write was a measurable share of a busy node's
 * CPU (issue 24).
 */
export async function fencedWrite(db: Queryable, fence: RowFence, setSql: string, params: readonly unknown[] = []): Promise<void> {
  const n = params.length;
  const res = await db.query(
    `UPDATE ${ident(fence.table)} SET ${setSql}
     WHERE ${ident(fence.keyColumn)} = $${n + 1} AND owner_node = $${n + 2} AND epoch = $${n + 3}
     RETURNING 1`,
    [...params, fence.key, fence.nodeId, fence.epoch],
  );
  if (res.rows.length === 0) throw rowLost(fence);
}

/** Extends the claim while it holds; LEASE_LOST otherwise. */
export async function renewRow<R extends object = Row>(db: Queryable, fence: RowFence, ttlMs: number): Promise<RowClaim<R>> {
  const row = await fencedUpdate<R>(db, fence, `lease_expires_at = ${expiresIn(1)}`, [ttlParam(ttlMs)]);
  return toClaim(fence.table, fence.keyColumn, fence.key, row);
}

/** Gives the row up (owner cleared, epoch kept so that the next claim moves past it); LEASE_LOST if already lost. */
export async function releaseRow(db: Queryable, fence: RowFence): Promise<void> {
  await fencedUpdate(db, fence, 'owner_node = NULL, lease_expires_at = NULL');
}
