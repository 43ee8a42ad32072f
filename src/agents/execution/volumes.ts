// An execution's manifest volumes (spec.volumes) as real volumes of the VolumeService, mounted through the FUSE layer
// (seed 000 "Mount lifecycle", docs/FSAL.md "Executions and volumes"):
//   start: for each spec.volumes entry, find or create the volume owned by the execution (idempotent on resume:
//          owner = the execution, label = the volume's name) — or, for an entry with `volume_id` (a workflow's
//          spec.storage volume passed by an Agent state), that existing volume of the tenant — grant it with the manifest's access mode and mount
//          path, then ask the FUSE daemon to Mount it and bind the returned host path into the sandbox at the mount
//          path (read-only for a read-only volume). Without a daemon configured the volume's directory is bound
//          directly: the container then writes to the disk itself, and the FSAL policy path applies to tools only.
//   end:   Unmount every volume this incarnation mounted; on a terminal status also revoke the grants. Ephemeral
//          volumes are removed by the node's reaper when their TTL passes; persistent ones stay until deleted.
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { FuseMountServiceClient } from '../../gen/orch/fuse/v1/fuse.js';
import { grantVolume, revokeGrants } from '../../fsal/grants.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Db } from '../../storage/db.ts';
import type { Volume } from '../../volumes/types.ts';
import type { VolumeService } from '../../volumes/service.ts';
import { parseMemory } from '../manifest/parse.ts';
import type { AgentManifest, VolumeSpec } from '../manifest/types.ts';
import { prepareVolumes, WORKSPACE } from './sandbox.ts';
import type { Mount } from './tools.ts';

export const EXECUTION_OWNER_KIND = 'execution';
/** spec.volumes[].size_limit when the manifest gives none. */
export const DEFAULT_VOLUME_SIZE_BYTES = 1024 * 1024 * 1024;
/** spec.volumes[].ttl_hours of an ephemeral volume when the manifest gives none (VolumeService's default). */
export const DEFAULT_VOLUME_TTL_HOURS = 24;
const FUSE_CALL_TIMEOUT_MS = 20_000;

export interface ExecutionVolumeDeps {
  db: Db;
  volumes: VolumeService;
  /** The FUSE daemon's FuseMountService address (config `spec.fuse.address`); absent: direct bind mounts. */
  fuseAddress?: string;
  logger: Logger;
}

export interface ExecutionRef {
  id: string;
  tenantId: string;
  manifest: AgentManifest;
}

/** A sandbox mount backed by a volume of the VolumeService. */
export interface VolumeBackedMount extends Mount {
  volumeId: string;
  name: string;
  /** Mounted through the FUSE daemon (else the volume's directory is bound directly). */
  fuse: boolean;
}

function unary<Req, Res>(fn: (req: Req, md: Metadata, opts: { deadline: Date }, cb: (err: ServiceError | null, res: Res) => void) => unknown, req: Req): Promise<Res> {
  return new Promise((resolve, reject) => {
    fn(req, new Metadata(), { deadline: new Date(Date.now() + FUSE_CALL_TIMEOUT_MS) }, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

export class ExecutionVolumes {
  private readonly log: Logger;
  private client: FuseMountServiceClient | undefined;
  /** Volumes this incarnation asked the daemon to mount (Unmount at the end). */
  private readonly mounted = new Set<string>();
  /** Volumes bound directly (no daemon): the container wrote past the quota accounting, so recount at the end. */
  private readonly direct = new Set<string>();

  constructor(
    private readonly deps: ExecutionVolumeDeps,
    private readonly exec: ExecutionRef,
  ) {
    this.log = deps.logger.child({ component: 'execution-volumes', execution: exec.id });
  }

  /** The volume of one spec.volumes entry: the execution's existing one (a resumed execution), else a new one. */
  private async volumeFor(v: VolumeSpec, existing: Volume[]): Promise<Volume> {
    // An existing volume of the tenant (a workflow's spec.storage volume): mounted, never made or owned here.
    if (v.volume_id !== undefined) {
      return this.deps.volumes.get(this.exec.tenantId, v.volume_id).catch((err: unknown) => {
        throw new Error(`volume ${v.name} (${v.volume_id}) cannot be mounted at ${v.mount_path}: ${(err as Error).message}`, { cause: err });
      });
    }
    const found = existing.find((x) => x.label === v.name);
    if (found) return found;
    const size = v.size_limit !== undefined ? parseMemory(v.size_limit) : DEFAULT_VOLUME_SIZE_BYTES;
    if (size === undefined) throw new Error(`spec.volumes ${v.name}: size_limit ${v.size_limit} is not a size`);
    const storageClass = v.storage_class ?? 'ephemeral';
    return this.deps.volumes.create({
      tenantId: this.exec.tenantId,
      ownerSubject: `agent:${this.exec.manifest.metadata.name}`,
      label: v.name,
      sizeLimitBytes: size,
      storageClass,
      ...(storageClass === 'ephemeral' ? { ttlHours: v.ttl_hours ?? DEFAULT_VOLUME_TTL_HOURS } : {}),
      owner: { kind: EXECUTION_OWNER_KIND, ref: this.exec.id },
    });
  }

  private fuseClient(): FuseMountServiceClient | undefined {
    if (!this.deps.fuseAddress) return undefined;
    this.client ??= new FuseMountServiceClient(this.deps.fuseAddress, credentials.createInsecure());
    return this.client;
  }

  /**
   * Creates or finds, grants and mounts every spec.volumes entry; answers the sandbox mounts in manifest order.
   * Idempotent: a second call (a fresh sandbox, a resumed execution) answers the same volumes and mount paths.
   */
  async attach(): Promise<VolumeBackedMount[]> {
    const specs = this.exec.manifest.spec.volumes;
    if (specs.length === 0) return [];
    const existing = specs.some((v) => v.volume_id === undefined)
      ? await this.deps.volumes.list(this.exec.tenantId, { ownerKind: EXECUTION_OWNER_KIND, ownerRef: this.exec.id, limit: 1000 })
      : [];
    const client = this.fuseClient();
    const out: VolumeBackedMount[] = [];
    for (const v of specs) {
      const volume = await this.volumeFor(v, existing);
      const readOnly = v.access_mode === 'read-only';
      // The grant is written before the mount: the daemon's first FSAL call already judges by its terms.
      await grantVolume(this.deps.db, {
        execution_id: this.exec.id,
        volume_id: volume.id,
        tenant_id: this.exec.tenantId,
        access_mode: readOnly ? 'read-only' : 'read-write',
        mount_path: v.mount_path,
      });
      let hostPath: string;
      if (client) {
        const res = await unary(client.mount.bind(client), { execution_id: this.exec.id, volume_id: volume.id, tenant_id: this.exec.tenantId }).catch((err: ServiceError) => {
          throw new Error(`the FUSE daemon at ${this.deps.fuseAddress} refused to mount volume ${v.name} (${volume.id}): ${err.details || err.message}`, { cause: err });
        });
        this.mounted.add(volume.id);
        hostPath = res.mount_path;
      } else {
        hostPath = await this.deps.volumes.hostPath(this.exec.tenantId, volume.id);
        this.direct.add(volume.id);
      }
      this.log.info({ volume: volume.id, name: v.name, mountPath: v.mount_path, hostPath, readOnly, fuse: !!client }, 'volume attached');
      out.push({ sandboxPath: v.mount_path, hostPath, readOnly, volumeId: volume.id, name: v.name, fuse: !!client });
    }
    return out;
  }

  /**
   * Unmounts what this incarnation mounted (a volume the daemon no longer holds is fine); with `ended` (a terminal
   * status) also revokes the execution's grants. A direct bind wrote to the disk past the quota accounting, so
   * those volumes are re-measured.
   */
  async detach(opts: { ended: boolean }): Promise<void> {
    const client = this.client;
    for (const volumeId of [...this.mounted]) {
      this.mounted.delete(volumeId);
      if (!client) continue;
      await unary(client.unmount.bind(client), { execution_id: this.exec.id, volume_id: volumeId }).catch((err: ServiceError) => {
        if (err.code !== status.NOT_FOUND) this.log.warn({ err, volume: volumeId }, 'unmounting a volume failed');
      });
    }
    for (const volumeId of [...this.direct]) {
      this.direct.delete(volumeId);
      await this.deps.volumes.recount(this.exec.tenantId, volumeId).catch((err: unknown) => this.log.warn({ err, volume: volumeId }, 'recounting a volume failed'));
    }
    // Only attach() grants a volume to an agent execution, and only for spec.volumes entries: with none there is no
    // grant to revoke, and the DELETE would be one more statement for every execution (issue 24).
    if (opts.ended && this.exec.manifest.spec.volumes.length > 0) {
      await revokeGrants(this.deps.db, this.exec.id).catch((err: unknown) => this.log.warn({ err }, 'revoking the volume grants failed'));
    }
    client?.close();
    this.client = undefined;
  }
}

/**
 * The mounts fs.* tools of an execution's other callers (SEAL) see: /workspace, plus the execution's existing
 * spec.volumes volumes, each with its volume id so the tools act through the VolumeService as the loop's do. Nothing
 * is created or mounted here; a spec.volumes entry whose volume does not exist yet is left out.
 */
export async function toolMountsOf(volumes: VolumeService, dataDir: string, exec: ExecutionRef): Promise<Mount[]> {
  const existing = exec.manifest.spec.volumes.some((v) => v.volume_id === undefined)
    ? await volumes.list(exec.tenantId, { ownerKind: EXECUTION_OWNER_KIND, ownerRef: exec.id, limit: 1000 })
    : [];
  const out: Mount[] = [];
  for (const v of exec.manifest.spec.volumes) {
    const volume = v.volume_id !== undefined
      ? await volumes.get(exec.tenantId, v.volume_id).catch(() => undefined)
      : existing.find((x) => x.label === v.name);
    if (!volume) continue;
    out.push({ sandboxPath: v.mount_path, hostPath: await volumes.hostPath(exec.tenantId, volume.id), readOnly: v.access_mode === 'read-only', volumeId: volume.id });
  }
  const workspace = out.some((m) => m.sandboxPath === WORKSPACE) ? [] : await prepareVolumes(dataDir, exec.id, { ...exec.manifest, spec: { ...exec.manifest.spec, volumes: [] } });
  return [...workspace, ...out];
}
