// Who holds a row's actor now (docs/CLUSTER.md "Messages to actors"): its live claim and the holder's cluster
// address, read from the row. Here, beside the Teller interface, so that a statement committing a fact (an approval's
// answer) can read the holder in the same round trip and hand it to `tell` (src/cluster/tell/post.ts reads it alone
// otherwise, and again on every retry).
import type { Holder, TellKind } from './tell.ts';

const TABLES: Record<TellKind, { table: string; active: string }> = {
  workflow: { table: 'workflow_executions', active: `('running', 'waiting_for_human_input')` },
  execution: { table: 'executions', active: `('pending', 'running')` },
};

/** What holderFrom reads about the row `r`. */
export interface HolderColumns {
  holder_active: boolean | null;
  holder_node: string | null;
  holder_live: boolean | null;
  holder_address: string | null;
}

/** The HolderColumns as (name, expression over the row aliased r) pairs. */
function holderExpressions(kind: TellKind): [keyof HolderColumns, string][] {
  // A parked workflow run (no actor in memory, no lease of its own) is held by its node while that node's parking
  // lease holds: the message goes there and brings it back (src/workflow/engine/parking.ts).
  const live = kind === 'workflow'
    ? `CASE WHEN r.parked THEN (SELECT p.expires_at > now() FROM workflow_parking_leases p WHERE p.node_id = r.owner_node)
       ELSE r.lease_expires_at > now() END`
    : 'r.lease_expires_at > now()';
  return [
    ['holder_active', `r.status IN ${TABLES[kind].active}`],
    ['holder_node', 'r.owner_node'],
    ['holder_live', live],
    // The holder's address by primary key in a scalar subquery: never a join that may read every member row.
    ['holder_address', `(SELECT CASE WHEN n.role = 'worker' THEN n.grpc_address ELSE n.cluster_address END FROM cluster_nodes n WHERE n.node_id = r.owner_node)`],
  ];
}

/** The HolderColumns of the row whose key is `keyExpr` (a parameter): a whole statement. */
export function holderSubquery(kind: TellKind, keyExpr: string): string {
  const cols = holderExpressions(kind).map(([name, expr]) => `${expr} AS ${name}`).join(', ');
  return `SELECT ${cols} FROM ${TABLES[kind].table} r WHERE r.id = ${keyExpr}`;
}

/**
 * The HolderColumns of the row whose key is `keyExpr` (a column of the enclosing statement) as one JSON object: a
 * scalar subquery for another statement's select list, by primary key (a scalar subquery is never turned into a join
 * the planner could make read the whole table).
 */
export function holderJson(kind: TellKind, keyExpr: string): string {
  const pairs = holderExpressions(kind).map(([name, expr]) => `'${name}', ${expr}`).join(', ');
  return `(SELECT json_build_object(${pairs}) FROM ${TABLES[kind].table} r WHERE r.id = ${keyExpr})`;
}

/** The Holder those columns say (none: no such row). */
export function holderFrom(r: HolderColumns | null | undefined): Holder {
  if (!r || !r.holder_active) return { gone: true };
  if (!r.holder_node || r.holder_live !== true) return { gone: false };
  return { gone: false, nodeId: r.holder_node, ...(r.holder_address ? { address: r.holder_address } : {}) };
}
