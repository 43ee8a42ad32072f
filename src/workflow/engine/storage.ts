// A workflow's spec.storage (seed 002) as real volumes of the VolumeService, made before the first state runs:
//   - `workspace` and every ephemeral (or id-less persistent) `shared_volumes[]` entry: a volume owned by the run
//     (owner kind `workflow_execution`, ref = the execution id, label = the volume's name), in the run's tenant, with
//     `size_limit_mb` (default 1024) as its byte limit (the VolumeService answers ENOSPC beyond it) and, when
//     ephemeral, an expiry `ttl_hours` after the run's start (not after this call: a resumed run keeps its deadline);
//   - a persistent shared volume with `volume_id`: that existing volume of the tenant, never created here; a missing
//     one fails the run with a StorageProvisionError naming the volume.
// Idempotent across a crash: the volumes rows are the durable record (owner ref + label), so a resumed run lists the
// run's volumes and creates only those missing — it gets the same ids back. Nothing else needs persisting.
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { OrchError } from '../../errors/catalog.ts';
import { grantVolume } from '../../fsal/grants.ts';
import { FuseMountServiceClient } from '../../gen/orch/fuse/v1/fuse.js';
import type { Logger } from '../../logging/logger.ts';
import type { Queryable } from '../../storage/db.ts';
import type { Volume, VolumeService } from '../../volumes/service.ts';
import type { StorageVolumeSpec, WorkflowManifest } from '../manifest/types.ts';

export const WORKFLOW_OWNER_KIND = 'workflow_execution';
export const WORKSPACE_NAME = 'workspace';
/** size_limit_mb when the manifest gives none (the seed leaves it open). */
export const DEFAULT_WORKFLOW_VOLUME_MB = 1024;
/** ttl_hours of an ephemeral volume when the manifest gives none (the VolumeService's default). */
export const DEFAULT_WORKFLOW_VOLUME_TTL_HOURS = 24;

/** Volume ids of a run's spec.storage: StateRunContext.storage and the `workflow.storage` template scope. */
export interface WorkflowStorageIds {
  workspace?: string;
  shared: Record<string, string>;
}

/** spec.storage cannot be provided (a persistent volume is missing): the run fails with this message. */
export class StorageProvisionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StorageProvisionError';
  }
}

export type StorageVolumes = Pick<VolumeService, 'create' | 'list' | 'get'>;

export interface StorageRun {
  id: string;
  tenant_id: string;
  started_at: Date;
  manifest: WorkflowManifest;
}

function hasStorage(m: WorkflowManifest): boolean {
  const s = m.spec.storage;
  return !!s && (s.workspace !== undefined || s.shared_volumes.length > 0);
}

/**
 * Finds or makes every spec.storage volume of the run; answers their ids. Persistent `volume_id`s are all checked
 * first, so a missing one fails the run before anything is created.
 */
export async function provisionWorkflowStorage(volumes: StorageVolumes, run: StorageRun, now = Date.now()): Promise<WorkflowStorageIds> {
  const out: WorkflowStorageIds = { shared: {} };
  if (!hasStorage(run.manifest)) return out;
  const storage = run.manifest.spec.storage!;
  for (const v of storage.shared_volumes) {
    if (v.volume_id === undefined) continue;
    try {
      const found = await volumes.get(run.tenant_id, v.volume_id);
      if (found.status !== 'active') throw new StorageProvisionError(`persistent volume ${v.volume_id} of shared volume "${v.name}" is being deleted`);
    } catch (err) {
      if (err instanceof OrchError && err.code === 'not_found') {
        throw new StorageProvisionError(`persistent volume ${v.volume_id} of shared volume "${v.name}" (spec.storage.shared_volumes) does not exist in tenant ${run.tenant_id}`);
      }
      throw err;
    }
    out.shared[v.name] = v.volume_id;
  }
  const owned = await volumes.list(run.tenant_id, { ownerKind: WORKFLOW_OWNER_KIND, ownerRef: run.id, limit: 1000 });
  const ensure = async (name: string, spec: StorageVolumeSpec): Promise<string> => {
    const existing = owned.find((x: Volume) => x.label === name);
    if (existing) return existing.id;
    const ephemeral = spec.storage_class === 'ephemeral';
    const ttlHours = spec.ttl_hours ?? DEFAULT_WORKFLOW_VOLUME_TTL_HOURS;
    // Counted from the run's start: a run resumed late gets what is left of its TTL, never a fresh one.
    const ttlSeconds = Math.max(0, ttlHours * 3600 - Math.max(0, (now - new Date(run.started_at).getTime()) / 1000));
    if (ephemeral && ttlSeconds <= 0) {
      // Made at the start and reaped since (or never made in time): the run outlived its volume.
      throw new StorageProvisionError(`ephemeral volume "${name}" has expired: its ttl_hours (${ttlHours}) counted from the run's start (${new Date(run.started_at).toISOString()}) have passed`);
    }
    const created = await volumes.create({
      tenantId: run.tenant_id,
      ownerSubject: `workflow:${run.manifest.metadata.name}`,
      label: name,
      sizeLimitBytes: (spec.size_limit_mb ?? DEFAULT_WORKFLOW_VOLUME_MB) * 1024 * 1024,
      storageClass: spec.storage_class,
      ...(ephemeral ? { ttlHours, ttlSeconds } : {}),
      owner: { kind: WORKFLOW_OWNER_KIND, ref: run.id },
    });
    return created.id;
  };
  if (storage.workspace) out.workspace = await ensure(WORKSPACE_NAME, storage.workspace);
  for (const v of storage.shared_volumes) {
    if (v.volume_id !== undefined) continue;
    out.shared[v.name] = await ensure(v.name, v);
  }
  return out;
}

/** One workflow volume a container of the run mounts (ContainerRun, ParallelContainerRun). */
export interface ContainerVolumeRef {
  tenantId: string;
  workflowExecutionId: string;
  volumeId: string;
  /** `workspace` or the shared volume's name. */
  name: string;
  mountPath: string;
  readOnly: boolean;
}

export interface WorkflowStorageOptions {
  /** With a FUSE daemon: grants are written here (volume_grants) and the FSAL judges the mounts by them. */
  db?: Queryable;
  /** FuseMountService address (config spec.fuse.address): containers get the volumes through the FUSE daemon. */
  fuseAddress?: string;
  logger?: Logger;
}

const FUSE_CALL_TIMEOUT_MS = 20_000;

function unary<Req, Res>(fn: (req: Req, md: Metadata, opts: { deadline: Date }, cb: (err: ServiceError | null, res: Res) => void) => unknown, req: Req): Promise<Res> {
  return new Promise((resolve, reject) => {
    fn(req, new Metadata(), { deadline: new Date(Date.now() + FUSE_CALL_TIMEOUT_MS) }, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

/**
 * The engine's storage dependency: provisions at run start, then lends the volumes to the container runners.
 *
 * With a FUSE daemon (spec.fuse.address) a container's volume is the daemon's mount for the run (principal = the
 * workflow execution id, granted read-write; a `read_only` mount is bound read-only into the container), so every
 * write goes through the FSAL and the VolumeService's quota: a write past size_limit_mb fails with ENOSPC inside
 * the container. The daemon holds one mount per volume: the steps of a ParallelContainerRun share it (counted), and
 * the last release unmounts it and revokes the grant, so the next state (an Agent's execution) can mount it.
 * Without a daemon the volume's directory is bound directly and re-measured after the container (writes land on
 * the disk first; the limit then refuses further growth through the VolumeService).
 */
export class WorkflowStorage {
  private client: FuseMountServiceClient | undefined;
  private readonly held = new Map<string, { count: number; path: Promise<string> }>();
  /** Unmounts in flight: a new use of the same volume waits for it rather than racing it. */
  private readonly unmounting = new Map<string, Promise<void>>();
  private readonly log: Logger | undefined;

  constructor(
    private readonly volumes: StorageVolumes & Pick<VolumeService, 'hostPath' | 'recount'>,
    private readonly opts: WorkflowStorageOptions = {},
  ) {
    this.log = opts.logger?.child({ component: 'workflow-storage' });
  }

  provision(run: StorageRun): Promise<WorkflowStorageIds> {
    return provisionWorkflowStorage(this.volumes, run);
  }

  /** Whether containers get the volumes through the FUSE daemon. */
  get fuse(): boolean {
    return !!(this.opts.fuseAddress && this.opts.db);
  }

  /** The host directory of a volume of the run's tenant (no FUSE). */
  hostPath(ref: { tenantId: string; volumeId: string }): Promise<string> {
    return this.volumes.hostPath(ref.tenantId, ref.volumeId);
  }

  /** Re-measures a volume a container wrote to through a bind mount. */
  async recount(ref: { tenantId: string; volumeId: string }): Promise<void> {
    await this.volumes.recount(ref.tenantId, ref.volumeId);
  }

  /** The host path to bind for one container's use of a volume (the runners' `resolveVolume`); release() after. */
  acquire(ref: ContainerVolumeRef): Promise<string> {
    if (!this.fuse) return this.hostPath(ref);
    const key = `${ref.workflowExecutionId}:${ref.volumeId}`;
    const held = this.held.get(key);
    if (held) {
      held.count += 1;
      return held.path;
    }
    const pending = this.unmounting.get(key) ?? Promise.resolve();
    const entry = { count: 1, path: pending.then(() => this.mount(ref)) };
    this.held.set(key, entry);
    entry.path.catch(() => {
      if (this.held.get(key) === entry) this.held.delete(key);
    });
    return entry.path;
  }

  /** The end of one container's use (the runners' `settleVolume`): unmount at the last, or re-measure (no FUSE). */
  async release(ref: ContainerVolumeRef): Promise<void> {
    if (!this.fuse) {
      if (!ref.readOnly) await this.recount(ref);
      return;
    }
    const key = `${ref.workflowExecutionId}:${ref.volumeId}`;
    const held = this.held.get(key);
    if (!held) return;
    held.count -= 1;
    if (held.count > 0) return;
    this.held.delete(key);
    const done = this.unmount(ref).catch((err: unknown) => this.log?.warn({ err, volume: ref.volumeId }, 'releasing a workflow volume failed'));
    this.unmounting.set(key, done);
    await done;
    if (this.unmounting.get(key) === done) this.unmounting.delete(key);
  }

  private async unmount(ref: ContainerVolumeRef): Promise<void> {
    const client = this.fuseClient();
    await unary(client.unmount.bind(client), { execution_id: ref.workflowExecutionId, volume_id: ref.volumeId }).catch((err: ServiceError) => {
      if (err.code !== status.NOT_FOUND) this.log?.warn({ err, volume: ref.volumeId }, 'unmounting a workflow volume failed');
    });
    await this.opts.db!.query('DELETE FROM volume_grants WHERE execution_id = $1 AND volume_id = $2', [ref.workflowExecutionId, ref.volumeId]);
  }

  private fuseClient(): FuseMountServiceClient {
    this.client ??= new FuseMountServiceClient(this.opts.fuseAddress!, credentials.createInsecure());
    return this.client;
  }

  private async mount(ref: ContainerVolumeRef): Promise<string> {
    // The grant first: the daemon's first FSAL call already judges by it. Read-write: a read_only container mount
    // is enforced by its read-only bind, and steps of one state may share the mount with different flags.
    await grantVolume(this.opts.db!, {
      execution_id: ref.workflowExecutionId,
      volume_id: ref.volumeId,
      tenant_id: ref.tenantId,
      access_mode: 'read-write',
      mount_path: ref.mountPath,
    });
    const client = this.fuseClient();
    const res = await unary(client.mount.bind(client), { execution_id: ref.workflowExecutionId, volume_id: ref.volumeId, tenant_id: ref.tenantId }).catch((err: ServiceError) => {
      throw new Error(`the FUSE daemon at ${this.opts.fuseAddress} refused to mount workflow volume ${ref.name} (${ref.volumeId}): ${err.details || err.message}`, { cause: err });
    });
    this.log?.info({ volume: ref.volumeId, name: ref.name, hostPath: res.mount_path, run: ref.workflowExecutionId }, 'workflow volume mounted');
    return res.mount_path;
  }

  close(): void {
    this.client?.close();
    this.client = undefined;
  }
}
