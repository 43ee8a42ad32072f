// The SQL a leased-row actor kind needs about its table: which rows it drives (the non-terminal statuses), how its
// actor claims one, and which ones a node should recover. The claim itself is row-lease.ts (epoch fencing); this
// only binds it to a table and its active statuses, so every kind claims and recovers by the same rule.
import type { Queryable } from '../../storage/db.ts';
import { claimRow, type RowClaim } from '../../storage/row-lease.ts';
import { ident } from '../../storage/sql-ident.ts';

export interface LeasedTable {
  table: string;
  keyColumn: string;
  /** The statuses an actor drives; any other status is terminal (trusted constants, lower-case words). */
  activeStatuses: readonly string[];
}

/** `status IN ('a', 'b')` for the table's active statuses (each checked as a plain word: they are interpolated). */
export function activeWhere(t: LeasedTable): string {
  return `status IN (${t.activeStatuses.map((s) => `'${ident(s)}'`).join(', ')})`;
}

/** Claims an active row for `nodeId` (a new epoch: an earlier incarnation is fenced off); null when it is held elsewhere or done. */
export function claimLeasedRow<R extends object>(db: Queryable, t: LeasedTable, key: string, nodeId: string, leaseMs: number): Promise<RowClaim<R> | null> {
  return claimRow<R>(db, t.table, t.keyColumn, key, nodeId, leaseMs, { where: activeWhere(t) });
}

/** Keys of the active rows this node should drive after a start: its own, unowned, or with an expired claim. */
export async function recoverableRowKeys(db: Queryable, t: LeasedTable, nodeId: string): Promise<string[]> {
  const k = ident(t.keyColumn);
  const res = await db.query<{ k: string }>(
    `SELECT ${k} AS k FROM ${ident(t.table)} WHERE ${activeWhere(t)}
       AND (owner_node IS NULL OR owner_node = $1 OR lease_expires_at IS NULL OR lease_expires_at < now())
     ORDER BY created_at`,
    [nodeId],
  );
  return res.rows.map((r) => r.k);
}

/** Whose lapsed rows a node resumes itself: `own` (a worker: its own rows only), or `non-workers` (a hybrid: any row
 * not held by a worker, whose loss is the controllers' to judge: they resume it on a survivor by their own rules). */
export type LapsedScope = 'own' | 'non-workers';

/**
 * Keys of active rows whose claim lapsed (expired, or released) that `nodeId` may drive, leaving out `live` (actors it
 * runs already); oldest first, at most `limit`. The claim itself is the actor's (claimLeasedRow: a new epoch).
 */
export async function lapsedRowKeys(db: Queryable, t: LeasedTable, nodeId: string, scope: LapsedScope, live: readonly string[] = [], limit = 200): Promise<string[]> {
  const k = ident(t.keyColumn);
  const whose =
    scope === 'own'
      ? 'e.owner_node = $1'
      : // The owner's member row is looked up by primary key in a scalar subquery: a NOT EXISTS becomes an anti join
        // that may read every member row ever registered on each sweep (issue 23).
        `(e.owner_node IS NULL OR e.owner_node = $1
          OR NOT COALESCE((SELECT n.role = 'worker' FROM cluster_nodes n WHERE n.node_id = e.owner_node), false))`;
  const res = await db.query<{ k: string }>(
    `SELECT e.${k}::TEXT AS k FROM ${ident(t.table)} e
     WHERE e.${activeWhere(t)} AND (e.lease_expires_at IS NULL OR e.lease_expires_at < now()) AND ${whose}
       AND NOT (e.${k}::TEXT = ANY($2::TEXT[]))
     ORDER BY e.created_at LIMIT ${Math.max(1, Math.floor(limit))}`,
    [nodeId, live],
  );
  return res.rows.map((r) => r.k);
}
