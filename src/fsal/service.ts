// FsalService (seed 000 "gRPC: FsalService"): the filesystem operations an execution may do on a volume, for the
// FUSE daemon (over gRPC) and any other transport. Every call, in order:
//   1. decodes execution_id and volume_id (UUIDs, else INVALID_ARGUMENT) and the path (INVALID_ARGUMENT for `..`);
//   2. finds the execution (in the caller's tenant when the call is authenticated; it must not have ended) and the
//      volume in the execution's tenant (NOT_FOUND); the execution may also be a workflow run, whose ContainerRun
//      containers use its spec.storage volumes by grant only, with no agent filesystem policy;
//   3. checks that the execution owns the volume (volumes.owner_kind = 'execution') or holds a grant
//      (volume_grants); otherwise PERMISSION_DENIED;
//   4. enforces the execution manifest's spec.security.filesystem read/write globs on the sandbox path (the grant's
//      mount path + the volume path) and the mount's access mode (read-only refuses every write), PERMISSION_DENIED;
//   5. does the operation through the VolumeService (path safety against symbolic links, exact quota: a write that
//      does not fit is RESOURCE_EXHAUSTED/ENOSPC and writes nothing);
//   6. reports owners squashed to the configured uid/gid;
//   7. persists a StorageEvent with the outcome (allowed or refused) and publishes it on `storage:<volume_id>`.
import { Errors, OrchError } from '../errors/catalog.ts';
import { isOutage } from '../errors/outage.ts';
import type { EventBus } from '../bus/bus.ts';
import { getExecution, getTenantExecution, isTerminal, type ExecutionRow } from '../agents/execution/repo.ts';
import type {
  CreateRequest,
  CreateResponse,
  DirEntry,
  FileAttributes,
  GetAttrRequest,
  GetAttrResponse,
  LookupRequest,
  LookupResponse,
  MkDirRequest,
  MkDirResponse,
  ReadDirRequest,
  ReadDirResponse,
  ReadRequest,
  ReadResponse,
  RemoveRequest,
  RemoveResponse,
  RenameRequest,
  RenameResponse,
  RmDirRequest,
  RmDirResponse,
  WriteRequest,
  WriteResponse,
} from '../gen/orch/fsal/v1/fsal.js';
import type { StatFsRequest, StatFsResponse } from '../gen/orch/fsal/v1/fsal_extension.js';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import type { FileInfo, Volume } from '../volumes/types.ts';
import type { VolumeService } from '../volumes/service.ts';
import { stat as fsStat } from 'node:fs/promises';
import { resolveInVolume } from '../volumes/paths.ts';
import { errnoOf, fsalError, fromOsError, statusName } from './errors.ts';
import { StorageEventBatcher, type FsalOperation, type NewStorageEvent } from './events.ts';
import { findGrant, type AccessMode } from './grants.ts';
import { normalizeFsalPath, parentOf } from './paths.ts';
import { checkFsalPolicy } from './policy.ts';

/** Who calls: the authenticated tenant, or undefined when the node runs without grpc_auth. */
export interface FsalCaller {
  tenantId?: string;
}

export interface FsalServiceOptions {
  db: Db;
  volumes: VolumeService;
  bus?: EventBus;
  logger: Logger;
  /** The owner every file is reported with (NFS all_squash). Default 65534:65534 (nobody:nogroup). */
  squash?: { uid: number; gid: number };
  /** Largest Read answered in one call; larger lengths are capped (the caller reads on). Default 2 MiB. */
  maxReadBytes?: number;
  /**
   * How long an authorization (execution, volume, ownership or grant, mount path, access mode) is reused for the
   * same caller, execution and volume: the policy is decided once per open mount rather than with three queries per
   * call. An ended execution or a revoked grant loses access within this time. Default 1000 ms (the FUSE mounts'
   * attribute cache); 0 decides on every call.
   */
  accessCacheMs?: number;
  /**
   * How long a call waits for its StorageEvent's commit through a database outage before it is refused UNAVAILABLE
   * (the event stays queued and is committed when the database returns). Default 5000, under the FUSE client's 10 s.
   */
  eventCommitWaitMs?: number;
}

/** Where an authorized call works. */
interface Access {
  /** The calling execution: an agent execution, or a workflow run (its ContainerRun states' containers). */
  execution: Pick<ExecutionRow, 'id' | 'tenant_id'> & { manifest: ExecutionRow['manifest'] | null };
  volume: Volume;
  mode: AccessMode;
  mountPath: string;
  /** The VolumeService bound to this volume's row (no lookup query per operation). */
  vols: VolumeService;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The mount path of a volume the execution owns (no grant names one): the agent's workspace. */
const OWNED_MOUNT_PATH = '/workspace';

type Kind = 'read' | 'meta' | 'write';

function volPath(rel: string): string {
  return `/${rel}`;
}

export class FsalService {
  private readonly db: Db;
  private readonly volumes: VolumeService;
  private readonly bus: EventBus | undefined;
  private readonly log: Logger;
  private readonly squash: { uid: number; gid: number };
  private readonly maxRead: number;
  private readonly accessCacheMs: number;
  private readonly accessCache = new Map<string, { access: Access; until: number }>();
  private readonly events: StorageEventBatcher;

  constructor(opts: FsalServiceOptions) {
    this.accessCacheMs = opts.accessCacheMs ?? 1000;
    this.db = opts.db;
    this.volumes = opts.volumes;
    this.bus = opts.bus;
    this.log = opts.logger.child({ component: 'fsal' });
    this.squash = opts.squash ?? { uid: 65534, gid: 65534 };
    this.maxRead = opts.maxReadBytes ?? 2 * 1024 * 1024;
    this.events = new StorageEventBatcher(this.db, this.bus, this.log, { maxWaitMs: opts.eventCommitWaitMs ?? 5000 });
  }

  /** Waits for the StorageEvents queued so far (every answered call's is already committed) and their publishing. */
  flushEvents(): Promise<void> {
    return this.events.flush();
  }

  /** Commits what is queued and stops (node shutdown). */
  close(): Promise<void> {
    return this.events.close();
  }

  // ---------------------------------------------------------------- operations

  /**
   * FsalExtensionService.StatFs (an orch extension): the volume's quota and usage and whether the caller's access is
   * read-only, for a mount's statfs (df) and its mount mode. Authorized as every call (the 1 s access cache, so no
   * query while it is warm: usage is that of the authorization, at most accessCacheMs old). It reads no file, so no
   * filesystem policy applies and no StorageEvent is recorded.
   */
  async statFs(caller: FsalCaller, req: StatFsRequest): Promise<StatFsResponse> {
    if (!UUID.test(req.execution_id)) throw fsalError('invalid', 'execution_id must be a UUID');
    if (!UUID.test(req.volume_id)) throw fsalError('invalid', 'volume_id must be a UUID');
    const a = await this.access(caller, req.execution_id, req.volume_id);
    return { size_limit_bytes: a.volume.size_limit_bytes, used_bytes: a.volume.used_bytes, read_only: a.mode === 'read-only' };
  }

  lookup(caller: FsalCaller, req: LookupRequest): Promise<LookupResponse> {
    return this.run(caller, 'lookup', req, 'meta', undefined, async (a, rel) => {
      const info = await this.statOf(a, rel);
      return { handle: handleOf(info), attributes: this.attrs(info) };
    });
  }

  getAttr(caller: FsalCaller, req: GetAttrRequest): Promise<GetAttrResponse> {
    return this.run(caller, 'getattr', req, 'meta', undefined, async (a, rel) => ({ attributes: this.attrs(await this.statOf(a, rel)) }));
  }

  readDir(caller: FsalCaller, req: ReadDirRequest): Promise<ReadDirResponse> {
    return this.run(caller, 'readdir', req, 'meta', undefined, async (a, rel) => {
      const dir = await this.statOf(a, rel);
      if (dir.type !== 'directory') throw fsalError('not_dir', `${volPath(rel)} is not a directory`);
      const all = await a.vols.listDir(a.volume.tenant_id, a.volume.id, volPath(rel));
      const from = Math.min(req.offset, all.length);
      const to = req.limit === 0 ? all.length : Math.min(all.length, from + req.limit);
      const entries: DirEntry[] = all.slice(from, to).map((f) => ({ name: f.name, handle: handleOf(f), attributes: this.attrs(f) }));
      return { entries, eof: to >= all.length };
    });
  }

  read(caller: FsalCaller, req: ReadRequest): Promise<ReadResponse> {
    return this.run(caller, 'read', req, 'read', undefined, async (a, rel, ev) => {
      ev.offset = req.offset;
      const length = Math.min(req.length, this.maxRead);
      // One resolution of the path and one open handle: the bytes and the size for `eof` come from it.
      const { data, size } = await a.vols.readAt(a.volume.tenant_id, a.volume.id, volPath(rel), req.offset, length).catch((err: unknown) => {
        throw errnoOf(err) === 'EISDIR' ? fsalError('is_dir', `${volPath(rel)} is a directory`, err) : err;
      });
      ev.bytes = data.length;
      return { data, eof: req.offset + data.length >= size };
    });
  }

  /**
   * A Write whose `applied` is called as soon as it has been done on disk or refused, before its StorageEvent is
   * committed (the answer still waits for that commit): a stream of Writes applies the next one while this one's event
   * commits, in order, and those events share commits (FsalExtensionService.WriteStream, src/gateway/grpc/fsal-extension.ts).
   */
  writeInOrder(caller: FsalCaller, req: WriteRequest, applied: (ok: boolean) => void): Promise<WriteResponse> {
    return this.writeWith(caller, req, applied);
  }

  write(caller: FsalCaller, req: WriteRequest): Promise<WriteResponse> {
    return this.writeWith(caller, req);
  }

  private writeWith(caller: FsalCaller, req: WriteRequest, applied?: (ok: boolean) => void): Promise<WriteResponse> {
    return this.run(caller, 'write', req, 'write', applied, async (a, rel, ev) => {
      ev.offset = req.offset;
      // No bytes: nothing is written and the file is marked modified now. The seed's FsalService has no SetAttr, so
      // this is what the FUSE mount's utimens (`touch`, tar, git's copy of a file's times) is made of; it is
      // authorized and recorded as the write it is.
      if (req.data.length === 0) {
        const info = await this.statOf(a, rel);
        if (info.type === 'directory') throw fsalError('is_dir', `${volPath(rel)} is a directory`);
        ev.bytes = 0;
        return { bytes_written: 0, attributes: this.attrs(await a.vols.touch(a.volume.tenant_id, a.volume.id, volPath(rel))) };
      }
      // The VolumeService reserves the growth before writing: a write past the quota fails whole (ENOSPC). It checks
      // the path (missing: ENOENT, a directory: EISDIR) and answers the attributes from the handle it wrote through,
      // so the path is resolved once under the volume's mutex rather than again in a stat before and after.
      const res = await a.vols.writeAtStat(a.volume.tenant_id, a.volume.id, volPath(rel), req.offset, req.data).catch((err: unknown) => {
        throw errnoOf(err) === 'EISDIR' ? fsalError('is_dir', `${volPath(rel)} is a directory`, err) : err;
      });
      ev.bytes = res.bytes_written;
      return { bytes_written: res.bytes_written, attributes: this.attrs(res.info) };
    });
  }

  create(caller: FsalCaller, req: CreateRequest): Promise<CreateResponse> {
    return this.run(caller, 'create', req, 'write', undefined, async (a, rel) => {
      if (rel === '') throw fsalError('already_exists', '/ is the volume root');
      if (req.exclusive) {
        // The exclusive create (every create of the FUSE mount) is tried first: O_CREAT|O_EXCL under the volume's
        // symlink check succeeds exactly when the checks below would pass (the parent is a directory in the volume,
        // the name is free) and does nothing when it fails. Only a failure runs the checks, to refuse with their
        // precise status. The checks first cost five more filesystem round trips per new file (10 → 5).
        try {
          const info = await a.vols.createFile(a.volume.tenant_id, a.volume.id, volPath(rel), { exclusive: true });
          return { handle: handleOf(info), attributes: this.attrs(info) };
        } catch (err) {
          await this.createChecks(a, rel, true);
          throw err;
        }
      }
      await this.createChecks(a, rel, false);
      const info = await a.vols.createFile(a.volume.tenant_id, a.volume.id, volPath(rel), { exclusive: false });
      return { handle: handleOf(info), attributes: this.attrs(info) };
    });
  }

  /** What a Create requires: the parent is a directory, and the name is free (exclusive) or not a directory. */
  private async createChecks(a: Access, rel: string, exclusive: boolean): Promise<void> {
    await this.requireDir(a, parentOf(rel));
    const existing = await this.statOrUndefined(a, rel);
    if (existing && exclusive) throw fsalError('already_exists', `${volPath(rel)} already exists`);
    if (existing?.type === 'directory') throw fsalError('is_dir', `${volPath(rel)} is a directory`);
  }

  remove(caller: FsalCaller, req: RemoveRequest): Promise<RemoveResponse> {
    return this.run(caller, 'remove', req, 'write', undefined, async (a, rel, ev) => {
      if (rel === '') throw fsalError('is_dir', '/ is the volume root');
      const info = await this.statOf(a, rel);
      if (info.type === 'directory') throw fsalError('is_dir', `${volPath(rel)} is a directory (use RmDir)`);
      const res = await a.vols.remove(a.volume.tenant_id, a.volume.id, volPath(rel));
      ev.bytes = res.freed_bytes;
      return {};
    });
  }

  rename(caller: FsalCaller, req: RenameRequest): Promise<RenameResponse> {
    return this.run(caller, 'rename', req, 'write', undefined, async (a, rel, ev) => {
      const to = normalizeFsalPath(req.new_path, 'new_path');
      ev.new_path = volPath(to);
      if (a.execution.manifest) checkFsalPolicy(a.execution.manifest, a.mountPath, to, 'write');
      if (rel === '' || to === '') throw fsalError('invalid', 'the volume root cannot be renamed or replaced');
      const src = await this.statOf(a, rel);
      await this.requireDir(a, parentOf(to));
      if (to === rel) return {};
      if (src.type === 'directory' && to.startsWith(`${rel}/`)) throw fsalError('invalid', `cannot move ${volPath(rel)} into itself`);
      const dst = await this.statOrUndefined(a, to);
      if (dst?.type === 'directory') throw fsalError('already_exists', `${volPath(to)} is an existing directory`);
      if (dst && src.type === 'directory') throw fsalError('not_dir', `${volPath(to)} is a file; a directory cannot replace it`);
      await a.vols.move(a.volume.tenant_id, a.volume.id, volPath(rel), volPath(to), { overwrite: true });
      return {};
    });
  }

  mkDir(caller: FsalCaller, req: MkDirRequest): Promise<MkDirResponse> {
    return this.run(caller, 'mkdir', req, 'write', undefined, async (a, rel) => {
      if (rel === '') throw fsalError('already_exists', '/ is the volume root');
      await this.requireDir(a, parentOf(rel));
      if (await this.statOrUndefined(a, rel)) throw fsalError('already_exists', `${volPath(rel)} already exists`);
      const info = await a.vols.mkdir(a.volume.tenant_id, a.volume.id, volPath(rel), { parents: false });
      return { handle: handleOf(info), attributes: this.attrs(info) };
    });
  }

  rmDir(caller: FsalCaller, req: RmDirRequest): Promise<RmDirResponse> {
    return this.run(caller, 'rmdir', req, 'write', undefined, async (a, rel) => {
      if (rel === '') throw fsalError('invalid', 'the volume root cannot be removed');
      const info = await this.statOf(a, rel);
      if (info.type !== 'directory') throw fsalError('not_dir', `${volPath(rel)} is not a directory`);
      const children = await a.vols.listDir(a.volume.tenant_id, a.volume.id, volPath(rel));
      if (children.length > 0) throw fsalError('not_empty', `${volPath(rel)} is not empty`);
      await a.vols.remove(a.volume.tenant_id, a.volume.id, volPath(rel));
      return {};
    });
  }

  // ---------------------------------------------------------------- the pipeline

  /**
   * Authorizes, runs `body`, and records the StorageEvent of the outcome. `ev` lets the body add bytes/offset.
   * Calls whose ids are not UUIDs are refused before anything can be recorded against them. A call is answered
   * only once its event is committed (group commit, StorageEventBatcher); if the database does not take it in
   * time the call is refused UNAVAILABLE, never answered success without its row.
   */
  private async run<T>(
    caller: FsalCaller,
    operation: FsalOperation,
    req: { execution_id: string; volume_id: string; path: string },
    kind: Kind,
    applied: ((ok: boolean) => void) | undefined,
    body: (a: Access, rel: string, ev: Partial<NewStorageEvent>) => Promise<T>,
  ): Promise<T> {
    if (!UUID.test(req.execution_id)) throw fsalError('invalid', 'execution_id must be a UUID');
    if (!UUID.test(req.volume_id)) throw fsalError('invalid', 'volume_id must be a UUID');
    const ev: Partial<NewStorageEvent> = {};
    let tenantId = caller.tenantId;
    let shownPath = req.path;
    let done: NewStorageEvent | undefined;
    // Before anything acts: past its queue limit (a long database outage) a call is refused, and not recorded.
    this.events.admit();
    try {
      const rel = normalizeFsalPath(req.path);
      shownPath = volPath(rel);
      const access = await this.access(caller, req.execution_id, req.volume_id);
      tenantId = access.execution.tenant_id;
      if (access.execution.manifest) checkFsalPolicy(access.execution.manifest, access.mountPath, rel, kind === 'write' ? 'write' : kind === 'meta' ? 'meta' : 'read');
      if (kind === 'write' && access.mode === 'read-only') {
        throw fsalError('read_only', `volume ${req.volume_id} is mounted read-only for execution ${req.execution_id}`);
      }
      const out = await body(access, rel, ev).catch((err: unknown) => {
        throw fromOsError(err, shownPath);
      });
      done = { ...ev, operation, volume_id: req.volume_id, execution_id: req.execution_id, tenant_id: tenantId, path: shownPath, status: 'OK' };
      const committed = this.events.add(done);
      applied?.(true);
      await committed;
      return out;
    } catch (err) {
      // The call's own event not committed in time: it stays queued (committed when the database returns), the call
      // is refused UNAVAILABLE; no second event for the same call.
      if (done) throw err;
      applied?.(false);
      const status = statusName(err);
      if (status === 'INTERNAL') this.log.error({ err, operation, volume: req.volume_id }, 'FSAL operation failed');
      const refusal = this.events.add({
        ...ev,
        bytes: 0,
        operation,
        volume_id: req.volume_id,
        execution_id: req.execution_id,
        tenant_id: tenantId ?? 'unknown',
        path: shownPath,
        status,
        error: err instanceof OrchError ? err.message : 'internal error',
      });
      const logged = refusal.catch((e: unknown) => this.log.error({ err: e }, 'recording a refused FSAL operation failed'));
      // A refusal did nothing; one caused by a database outage is answered at once (its event stays queued), any
      // other waits for its event like a success.
      if (!isOutage(err)) await logged;
      throw err;
    }
  }

  /** authorize(), reused for accessCacheMs per (caller tenant, execution, volume). Refusals are never cached. */
  private async access(caller: FsalCaller, executionId: string, volumeId: string): Promise<Access> {
    if (this.accessCacheMs <= 0) return this.authorize(caller, executionId, volumeId);
    const key = `${caller.tenantId ?? ''}|${executionId}|${volumeId}`;
    const now = Date.now();
    const hit = this.accessCache.get(key);
    if (hit && hit.until > now) return hit.access;
    const access = await this.authorize(caller, executionId, volumeId);
    if (this.accessCache.size >= 10_000) {
      for (const [k, v] of this.accessCache) if (v.until <= now) this.accessCache.delete(k);
      if (this.accessCache.size >= 10_000) this.accessCache.clear();
    }
    this.accessCache.set(key, { access, until: now + this.accessCacheMs });
    return access;
  }

  private async authorize(caller: FsalCaller, executionId: string, volumeId: string): Promise<Access> {
    const agentExecution = caller.tenantId === undefined ? await getExecution(this.db, executionId) : await getTenantExecution(this.db, caller.tenantId, executionId);
    let execution: Access['execution'];
    if (agentExecution) {
      if (isTerminal(agentExecution.status)) throw fsalError('denied', `execution ${executionId} has ended (${agentExecution.status}); its volume access ended with it`);
      execution = agentExecution;
    } else {
      // A workflow run: the containers of its ContainerRun states use the run's spec.storage volumes through its
      // grants (no agent manifest, so no spec.security.filesystem; the grant's access mode applies).
      const run = await this.workflowRun(caller, executionId);
      if (!run) throw fsalError('not_found', `execution ${executionId} not found`);
      if (!['running', 'waiting_for_human_input'].includes(run.status)) {
        throw fsalError('denied', `workflow execution ${executionId} has ended (${run.status}); its volume access ended with it`);
      }
      const grant = await findGrant(this.db, executionId, volumeId);
      if (!grant || grant.tenant_id !== run.tenant_id) throw fsalError('denied', `workflow execution ${executionId} was not granted volume ${volumeId}`);
      let volume: Volume;
      try {
        volume = await this.volumes.get(run.tenant_id, volumeId);
      } catch (err) {
        if (err instanceof OrchError && err.spec === Errors.NOT_FOUND) throw fsalError('not_found', `volume ${volumeId} not found`);
        throw err;
      }
      return { execution: { id: run.id, tenant_id: run.tenant_id, manifest: null }, volume, mode: grant.access_mode, mountPath: grant.mount_path, vols: this.volumes.bound(volume) };
    }
    let volume: Volume;
    try {
      volume = await this.volumes.get(execution.tenant_id, volumeId);
    } catch (err) {
      if (err instanceof OrchError && err.spec === Errors.NOT_FOUND) throw fsalError('not_found', `volume ${volumeId} not found`);
      throw err;
    }
    // A grant's terms win even over ownership: the orchestrator makes a manifest's volumes owned by the execution
    // and grants each with the manifest's mount path and access mode (a read-only volume stays read-only).
    const grant = await findGrant(this.db, executionId, volumeId);
    if (volume.owner_kind === 'execution' && volume.owner_ref === executionId && (!grant || grant.tenant_id !== execution.tenant_id)) {
      return { execution, volume, mode: 'read-write', mountPath: OWNED_MOUNT_PATH, vols: this.volumes.bound(volume) };
    }
    if (!grant || grant.tenant_id !== execution.tenant_id) {
      throw fsalError('denied', `execution ${executionId} neither owns volume ${volumeId} nor was granted it`);
    }
    return { execution, volume, mode: grant.access_mode, mountPath: grant.mount_path, vols: this.volumes.bound(volume) };
  }

  private async workflowRun(caller: FsalCaller, id: string): Promise<{ id: string; tenant_id: string; status: string } | undefined> {
    const res = caller.tenantId === undefined
      ? await this.db.query<{ id: string; tenant_id: string; status: string }>('SELECT id, tenant_id, status FROM workflow_executions WHERE id = $1', [id])
      : await this.db.query<{ id: string; tenant_id: string; status: string }>('SELECT id, tenant_id, status FROM workflow_executions WHERE id = $1 AND tenant_id = $2', [id, caller.tenantId]);
    return res.rows[0];
  }

  // ---------------------------------------------------------------- helpers

  private attrs(info: FileInfo): FileAttributes {
    return {
      size: info.type === 'directory' ? 0 : info.size,
      mode: info.mode & 0o7777,
      mtime_unix_ms: Date.parse(info.mtime),
      is_dir: info.type === 'directory',
      uid: this.squash.uid,
      gid: this.squash.gid,
    };
  }

  private statOf(a: Access, rel: string): Promise<FileInfo> {
    return a.vols.stat(a.volume.tenant_id, a.volume.id, volPath(rel));
  }

  private async statOrUndefined(a: Access, rel: string): Promise<FileInfo | undefined> {
    try {
      return await this.statOf(a, rel);
    } catch (err) {
      if (err instanceof OrchError && err.spec === Errors.NOT_FOUND) return undefined;
      throw err;
    }
  }

  /** The parent of a new name must be an existing directory (NOT_FOUND / FAILED_PRECONDITION otherwise). */
  private async requireDir(a: Access, rel: string): Promise<void> {
    const info = await this.statOrUndefined(a, rel);
    if (!info) throw fsalError('not_found', `${volPath(rel)} does not exist`);
    if (info.type === 'symlink') {
      // stat() reports the link itself; a link may point at a directory inside the volume (fine) or outside it
      // (an escape). The volume's symlink check decides, and answers PATH_OUTSIDE_BOUNDARY for an escape.
      const root = await a.vols.hostPath(a.volume.tenant_id, a.volume.id);
      const target = await resolveInVolume(root, volPath(rel), 'write');
      if ((await fsStat(target.host)).isDirectory()) return;
    }
    if (info.type !== 'directory') throw fsalError('not_dir', `${volPath(rel)} is not a directory`);
  }
}

/** The inode number: stable while the file exists, and what a FUSE daemon can use as its node id. */
function handleOf(info: FileInfo): string {
  return String(info.ino);
}

