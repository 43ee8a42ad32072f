// SQL of the agent registry (tables of migration 002). Every read is scoped: the caller's tenant plus global agents,
// and user-scoped agents only for their owner (a `viewer` of undefined is the engine, which sees the whole tenant).
import type { Queryable } from '../storage/db.ts';

export type AgentScope = 'user' | 'tenant' | 'global';

export interface AgentRow {
  id: string;
  tenant_id: string;
  name: string;
  scope: AgentScope;
  owner_subject: string;
  current_version: string;
  description: string | null;
  labels: Record<string, string> | null;
  status: string;
  created_at: Date | string;
  updated_at: Date | string;
}

export interface VersionRow {
  agent_id: string;
  tenant_id: string;
  name: string;
  version: string;
  manifest_yaml: string;
  manifest: unknown;
  deployed_by: string;
  created_at: Date | string;
  updated_at: Date | string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(s: string): boolean {
  return UUID.test(s);
}

/** $1 tenant, $2 viewer subject (NULL: every user-scoped agent of the tenant). */
const VISIBLE = `(a.tenant_id = $1 OR a.scope = 'global') AND (a.scope <> 'user' OR $2::TEXT IS NULL OR a.owner_subject = $2)`;
const COLUMNS = `a.id, a.tenant_id, a.name, a.scope, a.owner_subject, a.current_version, a.description, a.labels, a.status,
  a.created_at, a.updated_at`;

export async function listVisible(q: Queryable, tenant: string, viewer: string | undefined): Promise<AgentRow[]> {
  const res = await q.query<AgentRow>(`SELECT ${COLUMNS} FROM agents a WHERE ${VISIBLE} ORDER BY a.name, a.tenant_id`, [tenant, viewer ?? null]);
  return res.rows;
}

/** By UUID or by name; a tenant's own agent shadows a global one of the same name. */
export async function findVisible(q: Queryable, tenant: string, viewer: string | undefined, idOrName: string): Promise<AgentRow | undefined> {
  const byId = isUuid(idOrName);
  const res = await q.query<AgentRow>(
    `SELECT ${COLUMNS} FROM agents a WHERE ${VISIBLE} AND ${byId ? 'a.id = $3' : 'a.name = $3'}
     ORDER BY CASE WHEN a.tenant_id = $1 THEN 0 ELSE 1 END LIMIT 1`,
    [tenant, viewer ?? null, byId ? idOrName.toLowerCase() : idOrName],
  );
  return res.rows[0];
}

/**
 * findVisible and getVersion in one statement (issue 24: every execution start asked for both, two round trips):
 * the agent with `version`'s manifest, or its current version's when `version` is undefined. `v_version` is null
 * when the agent has no such version.
 */
export async function findVisibleManifest(
  q: Queryable,
  tenant: string,
  viewer: string | undefined,
  idOrName: string,
  version: string | undefined,
): Promise<(AgentRow & { v_version: string | null; v_manifest: unknown; v_manifest_yaml: string | null }) | undefined> {
  const byId = isUuid(idOrName);
  const res = await q.query<AgentRow & { v_version: string | null; v_manifest: unknown; v_manifest_yaml: string | null }>(
    `SELECT ${COLUMNS}, v.version AS v_version, v.manifest AS v_manifest, v.manifest_yaml AS v_manifest_yaml
     FROM agents a LEFT JOIN agent_versions v ON v.agent_id = a.id AND v.version = COALESCE($4::TEXT, a.current_version)
     WHERE ${VISIBLE} AND ${byId ? 'a.id = $3' : 'a.name = $3'}
     ORDER BY CASE WHEN a.tenant_id = $1 THEN 0 ELSE 1 END LIMIT 1`,
    [tenant, viewer ?? null, byId ? idOrName.toLowerCase() : idOrName, version ?? null],
  );
  return res.rows[0];
}

/** Inserts the agent row unless (tenant_id, name) exists; answers whether it did. */
export async function insertAgentIfAbsent(
  tx: Queryable,
  a: { id: string; tenantId: string; name: string; scope: AgentScope; owner: string; version: string; description: string | null; labels: Record<string, string> | null },
): Promise<boolean> {
  const res = await tx.query(
    `INSERT INTO agents (id, tenant_id, name, scope, owner_subject, current_version, description, labels)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (tenant_id, name) DO NOTHING`,
    [a.id, a.tenantId, a.name, a.scope, a.owner, a.version, a.description, a.labels === null ? null : JSON.stringify(a.labels)],
  );
  return res.rowCount === 1;
}

export async function lockByName(tx: Queryable, tenantId: string, name: string): Promise<AgentRow | undefined> {
  const res = await tx.query<AgentRow>(`SELECT ${COLUMNS} FROM agents a WHERE a.tenant_id = $1 AND a.name = $2 FOR UPDATE`, [tenantId, name]);
  return res.rows[0];
}

export async function lockById(tx: Queryable, id: string): Promise<AgentRow | undefined> {
  const res = await tx.query<AgentRow>(`SELECT ${COLUMNS} FROM agents a WHERE a.id = $1 FOR UPDATE`, [id]);
  return res.rows[0];
}

export async function getVersion(q: Queryable, agentId: string, version: string): Promise<VersionRow | undefined> {
  const res = await q.query<VersionRow>(
    `SELECT agent_id, tenant_id, name, version, manifest_yaml, manifest, deployed_by, created_at, updated_at
     FROM agent_versions WHERE agent_id = $1 AND version = $2`,
    [agentId, version],
  );
  return res.rows[0];
}

export async function listVersions(q: Queryable, agentId: string): Promise<VersionRow[]> {
  const res = await q.query<VersionRow>(
    `SELECT agent_id, tenant_id, name, version, manifest_yaml, manifest, deployed_by, created_at, updated_at
     FROM agent_versions WHERE agent_id = $1 ORDER BY updated_at DESC, version DESC`,
    [agentId],
  );
  return res.rows;
}

/** Writes one version: a new row, or (force) the same name and version replaced in place. */
export async function putVersion(
  tx: Queryable,
  v: { agentId: string; tenantId: string; name: string; version: string; yaml: string; manifest: unknown; by: string },
  replace: boolean,
): Promise<void> {
  if (replace) {
    await tx.query(
      `UPDATE agent_versions SET manifest_yaml = $3, manifest = $4, deployed_by = $5, updated_at = now()
       WHERE agent_id = $1 AND version = $2`,
      [v.agentId, v.version, v.yaml, JSON.stringify(v.manifest), v.by],
    );
    return;
  }
  await tx.query(
    `INSERT INTO agent_versions (agent_id, tenant_id, name, version, manifest_yaml, manifest, deployed_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [v.agentId, v.tenantId, v.name, v.version, v.yaml, JSON.stringify(v.manifest), v.by],
  );
}

export async function setCurrent(
  tx: Queryable,
  agentId: string,
  version: string,
  description: string | null,
  labels: Record<string, string> | null,
): Promise<void> {
  await tx.query(`UPDATE agents SET current_version = $2, description = $3, labels = $4, updated_at = now() WHERE id = $1`, [
    agentId,
    version,
    description,
    labels === null ? null : JSON.stringify(labels),
  ]);
}

export async function deleteVersion(tx: Queryable, agentId: string, version: string): Promise<number> {
  return (await tx.query('DELETE FROM agent_versions WHERE agent_id = $1 AND version = $2', [agentId, version])).rowCount;
}

export async function deleteAgent(tx: Queryable, agentId: string): Promise<void> {
  await tx.query('DELETE FROM agent_versions WHERE agent_id = $1', [agentId]);
  await tx.query('DELETE FROM agents WHERE id = $1', [agentId]);
}
