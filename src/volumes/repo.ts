// The SQL of the volumes capability. Every statement names the tenant; the byte accounting is one conditional
// UPDATE per change, so it stays exact with many writers in many processes without a transaction or a lock.
import type { Queryable } from '../storage/db.ts';
import type { StorageClass, Volume } from './types.ts';

export interface VolumeRow {
  id: string;
  tenant_id: string;
  label: string;
  storage_class: string;
  size_limit_bytes: string;
  used_bytes: string;
  owner_subject: string;
  owner_kind: string | null;
  owner_ref: string | null;
  node_id: string;
  status: string;
  ttl_hours: number | null;
  expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS =
  'id, tenant_id, label, storage_class, size_limit_bytes, used_bytes, owner_subject, owner_kind, owner_ref, node_id, status, ttl_hours, expires_at, created_at, updated_at';

/** A volume whose TTL has run out is gone for callers even before the reaper removes it. */
const LIVE = `status = 'active' AND (expires_at IS NULL OR expires_at > now())`;

const iso = (d: Date | null): string | null => (d === null ? null : d instanceof Date ? d.toISOString() : String(d));

export function toVolume(r: VolumeRow): Volume {
  return {
    id: r.id,
    tenant_id: r.tenant_id,
    label: r.label,
    storage_class: r.storage_class as StorageClass,
    size_limit_bytes: Number(r.size_limit_bytes),
    used_bytes: Number(r.used_bytes),
    owner_subject: r.owner_subject,
    owner_kind: r.owner_kind,
    owner_ref: r.owner_ref,
    node_id: r.node_id,
    status: r.status as Volume['status'],
    ttl_hours: r.ttl_hours,
    expires_at: iso(r.expires_at),
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  };
}

export interface InsertVolume {
  id: string;
  tenantId: string;
  label: string;
  storageClass: StorageClass;
  sizeLimitBytes: number;
  ownerSubject: string;
  ownerKind: string | null;
  ownerRef: string | null;
  nodeId: string;
  ttlHours: number | null;
  /** Seconds from now until expiry; null for none. */
  expiresInSeconds: number | null;
}

export async function insertVolume(q: Queryable, v: InsertVolume): Promise<VolumeRow> {
  const res = await q.query<VolumeRow>(
    `INSERT INTO volumes (id, tenant_id, label, storage_class, size_limit_bytes, used_bytes, owner_subject, owner_kind, owner_ref, node_id, status, ttl_hours, expires_at)
     VALUES ($1, $2, $3, $4, $5, 0, $6, $7, $8, $9, 'active', $10,
             CASE WHEN $11::FLOAT8 IS NULL THEN NULL ELSE now() + ($11::FLOAT8 * INTERVAL '1 second') END)
     RETURNING ${COLUMNS}`,
    [v.id, v.tenantId, v.label, v.storageClass, v.sizeLimitBytes, v.ownerSubject, v.ownerKind, v.ownerRef, v.nodeId, v.ttlHours, v.expiresInSeconds],
  );
  return res.rows[0]!;
}

/** A live volume of the tenant, or undefined. */
export async function findVolume(q: Queryable, tenantId: string, id: string): Promise<VolumeRow | undefined> {
  const res = await q.query<VolumeRow>(`SELECT ${COLUMNS} FROM volumes WHERE id = $1 AND tenant_id = $2 AND ${LIVE}`, [id, tenantId]);
  return res.rows[0];
}

/** Any volume of the tenant, live, expired or being deleted (delete is idempotent). */
export async function findAnyVolume(q: Queryable, tenantId: string, id: string): Promise<VolumeRow | undefined> {
  const res = await q.query<VolumeRow>(`SELECT ${COLUMNS} FROM volumes WHERE id = $1 AND tenant_id = $2`, [id, tenantId]);
  return res.rows[0];
}

export async function listVolumes(
  q: Queryable,
  tenantId: string,
  opts: { ownerKind?: string; ownerRef?: string; limit: number; offset: number },
): Promise<VolumeRow[]> {
  const params: unknown[] = [tenantId];
  let where = `tenant_id = $1 AND ${LIVE}`;
  if (opts.ownerKind !== undefined) {
    params.push(opts.ownerKind);
    where += ` AND owner_kind = $${params.length}`;
  }
  if (opts.ownerRef !== undefined) {
    params.push(opts.ownerRef);
    where += ` AND owner_ref = $${params.length}`;
  }
  params.push(opts.limit, opts.offset);
  const res = await q.query<VolumeRow>(
    `SELECT ${COLUMNS} FROM volumes WHERE ${where} ORDER BY created_at, id LIMIT $${params.length - 1} OFFSET $${params.length}`,
    params,
  );
  return res.rows;
}

export async function renameVolume(q: Queryable, tenantId: string, id: string, label: string): Promise<VolumeRow | undefined> {
  const res = await q.query<VolumeRow>(
    `UPDATE volumes SET label = $3, updated_at = now() WHERE id = $1 AND tenant_id = $2 AND ${LIVE} RETURNING ${COLUMNS}`,
    [id, tenantId, label],
  );
  return res.rows[0];
}

/**
 * Takes `delta` bytes (negative gives bytes back) in one statement: it succeeds only while the volume is live and
 * the new total stays within the limit. Answers the new used_bytes, or undefined when refused.
 */
export async function reserveBytes(q: Queryable, tenantId: string, id: string, delta: number): Promise<number | undefined> {
  if (delta <= 0) {
    const res = await q.query<{ used_bytes: string }>(
      `UPDATE volumes SET used_bytes = GREATEST(used_bytes + $3, 0), updated_at = now() WHERE id = $1 AND tenant_id = $2 AND ${LIVE} RETURNING used_bytes`,
      [id, tenantId, delta],
    );
    return res.rows[0] ? Number(res.rows[0].used_bytes) : undefined;
  }
  const res = await q.query<{ used_bytes: string }>(
    `UPDATE volumes SET used_bytes = used_bytes + $3, updated_at = now()
     WHERE id = $1 AND tenant_id = $2 AND ${LIVE} AND used_bytes + $3 <= size_limit_bytes RETURNING used_bytes`,
    [id, tenantId, delta],
  );
  return res.rows[0] ? Number(res.rows[0].used_bytes) : undefined;
}

/**
 * Takes `need` bytes plus, room permitting, up to `chunk` more (never more than an eighth of what stays free) in one
 * statement: the quota pool of VolumeService.reserve(). Answers what was taken and the new used_bytes, or undefined
 * when even `need` does not fit (or the volume is not live).
 */
export async function reserveAhead(q: Queryable, tenantId: string, id: string, need: number, chunk: number): Promise<{ reserved: number; used: number } | undefined> {
  // `take` comes from the row as this statement's snapshot saw it; the guard re-checks it against the row it
  // updates, so a concurrent change makes this answer nothing (the caller then reserves `need` alone), never
  // passes the limit.
  const res = await q.query<{ used_bytes: string; take: string }>(
    `UPDATE volumes AS v SET used_bytes = v.used_bytes + x.take, updated_at = now()
     FROM (SELECT id, $3::INT8 + LEAST($4::INT8, GREATEST(0, (size_limit_bytes - used_bytes - $3::INT8) >> 3)) AS take
           FROM volumes WHERE id = $1 AND tenant_id = $2) AS x
     WHERE v.id = x.id AND v.tenant_id = $2 AND v.status = 'active' AND (v.expires_at IS NULL OR v.expires_at > now()) AND v.used_bytes + x.take <= v.size_limit_bytes
     RETURNING v.used_bytes, x.take`,
    [id, tenantId, need, chunk],
  );
  const row = res.rows[0];
  if (row) return { reserved: Number(row.take), used: Number(row.used_bytes) };
  const used = await reserveBytes(q, tenantId, id, need);
  return used === undefined ? undefined : { reserved: need, used };
}

/**
 * Moves used_bytes by `delta` without the limit check: settling a failed or shorter write, giving back what a
 * delete freed. Runs whatever the status, so a write that raced with a delete still settles; never below zero.
 */
export async function adjustBytes(q: Queryable, tenantId: string, id: string, delta: number): Promise<void> {
  if (delta === 0) return;
  await q.query(`UPDATE volumes SET used_bytes = GREATEST(used_bytes + $3, 0), updated_at = now() WHERE id = $1 AND tenant_id = $2`, [id, tenantId, delta]);
}

/** Sets used_bytes to a measured value (recount after a tool wrote to the directory itself, e.g. git). */
export async function setUsedBytes(q: Queryable, tenantId: string, id: string, bytes: number): Promise<number | undefined> {
  const res = await q.query<{ used_bytes: string }>(
    `UPDATE volumes SET used_bytes = $3, updated_at = now() WHERE id = $1 AND tenant_id = $2 AND status = 'active' RETURNING used_bytes`,
    [id, tenantId, bytes],
  );
  return res.rows[0] ? Number(res.rows[0].used_bytes) : undefined;
}

/** Marks a volume `deleting` (no write is accepted from then on). Answers the row, whatever its previous status. */
export async function markDeleting(q: Queryable, tenantId: string, id: string): Promise<VolumeRow | undefined> {
  const res = await q.query<VolumeRow>(
    `UPDATE volumes SET status = 'deleting', updated_at = now() WHERE id = $1 AND tenant_id = $2 RETURNING ${COLUMNS}`,
    [id, tenantId],
  );
  return res.rows[0];
}

export async function deleteRow(q: Queryable, tenantId: string, id: string): Promise<void> {
  await q.query(`DELETE FROM volumes WHERE id = $1 AND tenant_id = $2 AND status = 'deleting'`, [id, tenantId]);
}

/** Volumes of this node the reaper must remove: expired ephemeral ones, and deletes another node started. */
export async function dueForReaping(q: Queryable, nodeId: string, limit: number): Promise<{ id: string; tenant_id: string; status: string }[]> {
  const res = await q.query<{ id: string; tenant_id: string; status: string }>(
    `SELECT id, tenant_id, status FROM volumes
     WHERE node_id = $1 AND (status = 'deleting' OR (expires_at IS NOT NULL AND expires_at <= now()))
     ORDER BY id LIMIT $2`,
    [nodeId, limit],
  );
  return res.rows;
}

/** Active volumes held by a node (reconcile after a restart). */
export async function activeVolumesOfNode(q: Queryable, nodeId: string): Promise<{ id: string; tenant_id: string }[]> {
  const res = await q.query<{ id: string; tenant_id: string }>(`SELECT id, tenant_id FROM volumes WHERE node_id = $1 AND status = 'active' ORDER BY id`, [nodeId]);
  return res.rows;
}
