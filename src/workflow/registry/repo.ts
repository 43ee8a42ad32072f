// SQL of the workflow registry (table `workflows`, migration 009): one row per deployed version. Every read is
// scoped by the caller's tenant: the tenant's rows, global rows, and user rows only for their owner.
import type { Queryable } from '../../storage/db.ts';
import type { WorkflowScope } from './types.ts';

export interface WorkflowRow {
  id: string;
  tenant_id: string;
  name: string;
  version: string;
  scope: WorkflowScope;
  scope_owner: string;
  deployed_by: string;
  description: string | null;
  labels: Record<string, string> | null;
  initial_state: string;
  manifest: unknown;
  manifest_yaml: string;
  created_at: Date | string;
  updated_at: Date | string;
}

/** Where a row lives: the partition tenant, its scope and (user scope) its owner. */
export interface Place {
  tenantId: string;
  scope: WorkflowScope;
  /** The owning subject for user scope; '' for tenant and global. */
  owner: string;
}

const COLUMNS = `w.id, w.tenant_id, w.name, w.version, w.scope, w.scope_owner, w.deployed_by, w.description, w.labels,
  w.initial_state, w.manifest, w.manifest_yaml, w.created_at, w.updated_at`;

/** $1 tenant, $2 viewer subject (NULL: no user-scoped rows). */
const VISIBLE = `((w.tenant_id = $1 AND w.scope = 'tenant') OR w.scope = 'global' OR (w.tenant_id = $1 AND w.scope = 'user' AND w.scope_owner = $2))`;

export async function visibleRows(q: Queryable, tenant: string, viewer: string | undefined): Promise<WorkflowRow[]> {
  const res = await q.query<WorkflowRow>(`SELECT ${COLUMNS} FROM workflows w WHERE ${VISIBLE} ORDER BY w.name`, [tenant, viewer ?? null]);
  return res.rows;
}

export async function visibleByName(q: Queryable, tenant: string, viewer: string | undefined, name: string): Promise<WorkflowRow[]> {
  const res = await q.query<WorkflowRow>(`SELECT ${COLUMNS} FROM workflows w WHERE ${VISIBLE} AND w.name = $3`, [tenant, viewer ?? null, name]);
  return res.rows;
}

const HEAD_COLUMNS = `w.id, w.tenant_id, w.name, w.version, w.scope, w.scope_owner, w.deployed_by, w.description, w.labels,
  w.initial_state, NULL AS manifest, '' AS manifest_yaml, w.created_at, w.updated_at`;

/**
 * A scalar subquery: the fingerprint of every row named `name` that `tenant` and `viewer` see (SQL expressions, e.g.
 * `$1` or a column). It covers each row's id, place and updated_at to the microsecond, so any deploy, forced redeploy,
 * delete, promote or demote that could change what a name resolves to for that caller changes it. A run start checks
 * it inside its own INSERT (engine/starts.ts), which lets a node resolve a name from memory and still never start a
 * version the registry no longer resolves to: on a mismatch nothing is written and the start resolves again.
 */
export function visibleFingerprintSql(tenant: string, viewer: string, name: string): string {
  return `(SELECT COALESCE(md5(string_agg(f.id::TEXT || '/' || f.tenant_id || '/' || f.scope || '/' || f.scope_owner || '/' ||
      ((EXTRACT(EPOCH FROM f.updated_at) * 1000000)::INT8)::TEXT, ',' ORDER BY f.id)), '')
    FROM workflows f
    WHERE ((f.tenant_id = ${tenant} AND f.scope = 'tenant') OR f.scope = 'global' OR (f.tenant_id = ${tenant} AND f.scope = 'user' AND f.scope_owner = ${viewer}))
      AND f.name = ${name})`;
}

/** As visibleByName without the manifest and its YAML (`manifest` null): for resolving which version to run. Each row
 * carries the fingerprint of the whole visible set (read in the same statement, so it matches the rows). */
export async function visibleHeadsByName(q: Queryable, tenant: string, viewer: string | undefined, name: string): Promise<(WorkflowRow & { fingerprint: string })[]> {
  const res = await q.query<WorkflowRow & { fingerprint: string }>(
    `SELECT ${HEAD_COLUMNS}, ${visibleFingerprintSql('$1::TEXT', '$2::TEXT', '$3::TEXT')} AS fingerprint FROM workflows w WHERE ${VISIBLE} AND w.name = $3`,
    [tenant, viewer ?? null, name],
  );
  return res.rows;
}

/** The manifest of one version with its updated_at (undefined when it is gone). */
export async function manifestOf(q: Queryable, id: string): Promise<{ manifest: unknown; manifest_yaml: string; updated_at: Date | string } | undefined> {
  const res = await q.query<{ manifest: unknown; manifest_yaml: string; updated_at: Date | string }>('SELECT manifest, manifest_yaml, updated_at FROM workflows WHERE id = $1', [id]);
  return res.rows[0];
}

export async function visibleById(q: Queryable, tenant: string, viewer: string | undefined, id: string): Promise<WorkflowRow | undefined> {
  const res = await q.query<WorkflowRow>(`SELECT ${COLUMNS} FROM workflows w WHERE ${VISIBLE} AND w.id = $3`, [tenant, viewer ?? null, id]);
  return res.rows[0];
}

export async function rowsAt(q: Queryable, at: Place, name: string, lock = false): Promise<WorkflowRow[]> {
  const res = await q.query<WorkflowRow>(
    `SELECT ${COLUMNS} FROM workflows w WHERE w.tenant_id = $1 AND w.scope = $2 AND w.scope_owner = $3 AND w.name = $4${lock ? ' FOR UPDATE' : ''}`,
    [at.tenantId, at.scope, at.owner, name],
  );
  return res.rows;
}

export interface NewVersion {
  id: string;
  name: string;
  version: string;
  deployedBy: string;
  description: string | null;
  labels: Record<string, string> | null;
  initialState: string;
  manifest: unknown;
  yaml: string;
}

/** Inserts the version unless that name and version exist at `at`; answers whether it did. */
export async function insertIfAbsent(tx: Queryable, at: Place, v: NewVersion): Promise<boolean> {
  const res = await tx.query(
    `INSERT INTO workflows (id, tenant_id, name, version, scope, scope_owner, deployed_by, description, labels, initial_state, manifest, manifest_yaml)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
     ON CONFLICT (tenant_id, scope, scope_owner, name, version) DO NOTHING`,
    [v.id, at.tenantId, v.name, v.version, at.scope, at.owner, v.deployedBy, v.description, json(v.labels), v.initialState, JSON.stringify(v.manifest), v.yaml],
  );
  return res.rowCount === 1;
}

/** force: the same name and version replaced in place (its id is kept). */
export async function replace(tx: Queryable, id: string, v: NewVersion): Promise<void> {
  await tx.query(
    `UPDATE workflows SET deployed_by = $2, description = $3, labels = $4, initial_state = $5, manifest = $6, manifest_yaml = $7, updated_at = now()
     WHERE id = $1`,
    [id, v.deployedBy, v.description, json(v.labels), v.initialState, JSON.stringify(v.manifest), v.yaml],
  );
}

export async function deleteIds(tx: Queryable, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  return (await tx.query(`DELETE FROM workflows WHERE id = ANY($1::UUID[])`, [ids])).rowCount;
}

/** Promote and demote: the rows change scope (and partition), keeping their ids. */
export async function move(tx: Queryable, ids: readonly string[], to: Place): Promise<void> {
  await tx.query(`UPDATE workflows SET tenant_id = $2, scope = $3, scope_owner = $4, updated_at = now() WHERE id = ANY($1::UUID[])`, [
    ids,
    to.tenantId,
    to.scope,
    to.owner,
  ]);
}

function json(v: unknown): string | null {
  return v === null || v === undefined ? null : JSON.stringify(v);
}
