// Which executions may use which volumes (volume_grants, migration 007). The orchestrator grants a volume when it
// mounts it for an execution (access mode and mount path from the manifest) and revokes the grants when the execution
// ends; an execution also owns the volumes made for it (volumes.owner_kind = 'execution', owner_ref = its id).
import type { Queryable } from '../storage/db.ts';

export type AccessMode = 'read-write' | 'read-only';

export interface VolumeGrant {
  execution_id: string;
  volume_id: string;
  tenant_id: string;
  access_mode: AccessMode;
  mount_path: string;
}

/** Grants (or re-grants with new terms) `volume_id` to `execution_id`. */
export async function grantVolume(db: Queryable, g: VolumeGrant): Promise<void> {
  await db.query(
    `INSERT INTO volume_grants (execution_id, volume_id, tenant_id, access_mode, mount_path) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (execution_id, volume_id) DO UPDATE SET access_mode = EXCLUDED.access_mode, mount_path = EXCLUDED.mount_path, tenant_id = EXCLUDED.tenant_id`,
    [g.execution_id, g.volume_id, g.tenant_id, g.access_mode, g.mount_path],
  );
}

export async function revokeGrants(db: Queryable, executionId: string): Promise<number> {
  const res = await db.query('DELETE FROM volume_grants WHERE execution_id = $1', [executionId]);
  return res.rowCount;
}

export async function findGrant(db: Queryable, executionId: string, volumeId: string): Promise<VolumeGrant | undefined> {
  const res = await db.query<VolumeGrant>(
    'SELECT execution_id, volume_id, tenant_id, access_mode, mount_path FROM volume_grants WHERE execution_id = $1 AND volume_id = $2',
    [executionId, volumeId],
  );
  return res.rows[0];
}
