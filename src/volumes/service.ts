// VolumeService: the one implementation of volumes behind HTTP (/v1/volumes), the orch.volume.*/orch.file.* tools,
// the CLI (through HTTP), FSAL (gRPC, FUSE) and the workflow engine's spec.storage volumes.
//
// A volume is a row of `volumes` (the truth: owner, limit, usage, expiry) and a directory `<dataDir>/volumes/<id>` on
// the node that made it. Every query names the tenant; a volume of another tenant is NOT_FOUND.
//
// Byte accounting (used_bytes = the sum of the sizes of the volume's regular files), exact under concurrency:
//   1. the data of a whole-file write is streamed into a staging file outside the volume (same filesystem), bounded
//      by the space the volume has left, so an oversized upload stops early;
//   2. under a per-volume in-process mutex: measure the size of what the change replaces, reserve the delta with one
//      conditional UPDATE (`used_bytes + delta <= size_limit_bytes`; refused → STORAGE_FULL, nothing written), apply
//      the change (an atomic rename, a positional write, an rm), and give the delta back if the change fails.
// The SQL reservation is what keeps the limit across processes and nodes; the mutex only makes the "size it
// replaces" measurement exact for two changes of the same path in this process. (Two processes writing the same
// path of one volume at the same instant could miscount that file's old size; one node process owns a data dir,
// and FUSE goes through this process's FSAL, so that does not happen in a deployment. recount() re-measures.)
//
// Ephemeral volumes expire (`expires_at`); an expired volume is gone for callers at once and the reaper
// (startReaper, run by the node) removes its files and row. Its first pass runs reconcile(), which re-measures this
// node's volumes and sweeps stale staging files (what a crash between reservation and rename leaves behind). A delete marks the row `deleting` first, so no write is
// accepted after it starts, then removes the directory, then the row.
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { lstat, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import { fileInfo, regularFileSize, translateFsError, treeSize } from './disk.ts';
import { KeyedMutex } from './mutex.ts';
import { normalizeVolumePath, resolveEntry, resolveInVolume, type VolumePath } from './paths.ts';
import * as repo from './repo.ts';
import {
  STORAGE_CLASSES,
  type CreateVolumeInput,
  type FileInfo,
  type ListVolumesOptions,
  type RemoveResult,
  type StorageClass,
  type Volume,
  type VolumeQuota,
  type WriteResult,
} from './types.ts';

export type * from './types.ts';

export interface VolumeServiceOptions {
  db: Db;
  /** The node's data dir; volumes live in `<dataDir>/volumes/<id>`. */
  dataDir: string;
  /** This node's id: volumes made here are served here; the reaper removes only this node's volumes. */
  nodeId: string;
  logger: Logger;
  /**
   * Quota reserved ahead in chunks of up to this many bytes (0, the default: one conditional UPDATE per growing
   * write). The node sets it for the FSAL/FUSE path, where a write per 128 KiB would otherwise be a committed UPDATE
   * each; see reserve() for what it keeps exact.
   */
  quotaChunkBytes?: number;
  /** A chunk's unused rest is given back after this many ms without a reservation on the volume. Default 250. */
  quotaIdleMs?: number;
}

/** Bytes reserved in SQL ahead of the writes of this process that will use them (one per volume). */
interface QuotaPool {
  tenantId: string;
  bytes: number;
  /** used_bytes as the last reservation statement answered it (the pool included). */
  dbUsed: number;
  timer?: NodeJS.Timeout;
}

export interface VolumeReaper {
  /** Runs one pass now (besides the timer); answers how many volumes it removed. */
  runOnce(): Promise<number>;
  /** Stops the timer and waits for a pass in flight. */
  stop(): Promise<void>;
}

/** Data for a whole-file write: bytes, text (UTF-8) or a stream of chunks (an HTTP upload). */
export type WriteData = Buffer | Uint8Array | string | AsyncIterable<Uint8Array | string>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_LABEL = 200;
const DEFAULT_TTL_HOURS = 24;
/** Ten years: longer is a persistent volume. */
const MAX_TTL_HOURS = 24 * 365 * 10;
const MAX_LIST = 1000;
/** The largest read answered in one piece (readFile); downloads stream and have no cap. */
export const MAX_READ_BYTES = 64 * 1024 * 1024;

const nf = (id: string): OrchError => new OrchError(Errors.NOT_FOUND, `volume ${id} not found`);

function storageFull(shown: string, need: number, v: { size_limit_bytes: number; used_bytes: number }): OrchError {
  return new OrchError(Errors.STORAGE_FULL, `${shown}: no space left on the volume (ENOSPC): ${need} more bytes needed, ${Math.max(0, v.size_limit_bytes - v.used_bytes)} of ${v.size_limit_bytes} free`, {
    details: { code: 'ENOSPC', size_limit_bytes: v.size_limit_bytes, used_bytes: v.used_bytes, requested_bytes: need },
  });
}

function checkLabel(label: unknown): string {
  if (typeof label !== 'string' || label.trim() === '') throw new OrchError(Errors.BAD_REQUEST, 'label must be a non-empty string');
  const l = label.trim();
  if (l.length > MAX_LABEL) throw new OrchError(Errors.BAD_REQUEST, `label must be at most ${MAX_LABEL} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(l)) throw new OrchError(Errors.BAD_REQUEST, 'label must not contain control characters');
  return l;
}

function checkNonNegInt(v: unknown, name: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new OrchError(Errors.BAD_REQUEST, `${name} must be a non-negative integer`);
  return v;
}

function toBuffer(data: Buffer | Uint8Array | string): Buffer {
  return typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

export class VolumeService {
  private readonly db: Db;
  private readonly nodeId: string;
  private readonly log: Logger;
  /** `<dataDir>/volumes`. */
  readonly volumesDir: string;
  private readonly stagingDir: string;
  private readonly mutex = new KeyedMutex();
  private readonly quotaChunk: number;
  private readonly quotaIdleMs: number;
  private readonly pools = new Map<string, QuotaPool>();
  /**
   * Per volume, how many times a pool statement (a reservation ahead, a give-back) started or finished: odd while
   * one is on its way. get() reads the row and the pool at two moments; a count that moved between them (or odd) means
   * the row may count bytes the pool does not show yet, or no longer (see get()). Dropped by purge().
   */
  private readonly poolSeq = new Map<string, { n: number }>();

  constructor(opts: VolumeServiceOptions) {
    this.quotaChunk = Math.max(0, opts.quotaChunkBytes ?? 0);
    this.quotaIdleMs = opts.quotaIdleMs ?? 250;
    this.db = opts.db;
    this.nodeId = opts.nodeId;
    this.log = opts.logger.child({ component: 'volumes' });
    this.volumesDir = path.resolve(opts.dataDir, 'volumes');
    // Beside the volumes (same filesystem, so a rename into a volume is atomic), never inside one.
    this.stagingDir = path.join(this.volumesDir, '.staging');
  }

  // ---------------------------------------------------------------- volumes

  async create(input: CreateVolumeInput): Promise<Volume> {
    const label = checkLabel(input.label);
    const limit = input.sizeLimitBytes;
    if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit <= 0) throw new OrchError(Errors.BAD_REQUEST, 'size_limit_bytes must be a positive integer');
    const storageClass: StorageClass = input.storageClass ?? 'persistent';
    if (!STORAGE_CLASSES.includes(storageClass)) throw new OrchError(Errors.BAD_REQUEST, `storage_class must be one of ${STORAGE_CLASSES.join(', ')}`);
    if (storageClass === 'persistent' && (input.ttlHours !== undefined || input.ttlSeconds !== undefined)) {
      throw new OrchError(Errors.BAD_REQUEST, 'ttl_hours applies to ephemeral volumes only');
    }
    let ttlHours: number | null = null;
    let expiresIn: number | null = null;
    if (storageClass === 'ephemeral') {
      ttlHours = input.ttlHours ?? DEFAULT_TTL_HOURS;
      if (!Number.isInteger(ttlHours) || ttlHours <= 0 || ttlHours > MAX_TTL_HOURS) throw new OrchError(Errors.BAD_REQUEST, `ttl_hours must be an integer from 1 to ${MAX_TTL_HOURS}`);
      expiresIn = ttlHours * 3600;
      if (input.ttlSeconds !== undefined) {
        if (typeof input.ttlSeconds !== 'number' || !Number.isFinite(input.ttlSeconds) || input.ttlSeconds < 0) throw new OrchError(Errors.BAD_REQUEST, 'ttl_seconds must be a non-negative number');
        expiresIn = input.ttlSeconds;
      }
    }
    if (input.owner !== undefined && (typeof input.owner.kind !== 'string' || !input.owner.kind || typeof input.owner.ref !== 'string' || !input.owner.ref)) {
      throw new OrchError(Errors.BAD_REQUEST, 'owner needs a kind and a ref');
    }
    if (!input.tenantId || !input.ownerSubject) throw new OrchError(Errors.BAD_REQUEST, 'a volume needs an owner tenant and user');
    const id = randomUUID();
    // The row first (the truth), then the directory; a directory that cannot be made takes the row back with it.
    const row = await repo.insertVolume(this.db, {
      id,
      tenantId: input.tenantId,
      label,
      storageClass,
      sizeLimitBytes: limit,
      ownerSubject: input.ownerSubject,
      ownerKind: input.owner?.kind ?? null,
      ownerRef: input.owner?.ref ?? null,
      nodeId: this.nodeId,
      ttlHours,
      expiresInSeconds: expiresIn,
    });
    try {
      await mkdir(this.dirOf(id), { recursive: true });
    } catch (err) {
      await repo.markDeleting(this.db, input.tenantId, id);
      await repo.deleteRow(this.db, input.tenantId, id);
      throw err;
    }
    this.log.info({ volume: id, tenant: input.tenantId, storageClass, limit }, 'volume created');
    return repo.toVolume(row);
  }

  async list(tenantId: string, opts: ListVolumesOptions = {}): Promise<Volume[]> {
    const limit = opts.limit ?? 100;
    const offset = opts.offset ?? 0;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST) throw new OrchError(Errors.BAD_REQUEST, `limit must be an integer from 1 to ${MAX_LIST}`);
    checkNonNegInt(offset, 'offset');
    const rows = await repo.listVolumes(this.db, tenantId, {
      limit,
      offset,
      ...(opts.ownerKind !== undefined ? { ownerKind: opts.ownerKind } : {}),
      ...(opts.ownerRef !== undefined ? { ownerRef: opts.ownerRef } : {}),
    });
    return rows.map(repo.toVolume);
  }

  /**
   * The live volume; its used_bytes is the row's minus what this process reserved ahead and has not written yet
   * (reserve()), so bytes count from the moment a write reserves them. The row and the pool are read at two moments:
   * when a pool statement's answer came between them (its UPDATE committed, the pool not yet told, or the other way
   * round) that difference was off by the chunk: more than the writes will make, or less than the disk. Such a read
   * is read again under the volume's mutex, where no pool statement runs (they all run under it, so get() called by
   * the holder never comes to this).
   */
  async get(tenantId: string, id: string): Promise<Volume> {
    if (!UUID.test(id)) throw nf(id);
    const seq = this.poolSeq.get(id)?.n ?? 0;
    if (seq % 2 === 0) {
      const v = await this.readUsage(tenantId, id);
      if ((this.poolSeq.get(id)?.n ?? 0) === seq) return v;
    }
    return this.mutex.run(id, () => this.readUsage(tenantId, id));
  }

  private async readUsage(tenantId: string, id: string): Promise<Volume> {
    const row = await repo.findVolume(this.db, tenantId, id);
    if (!row) throw nf(id);
    const v = repo.toVolume(row);
    const pooled = this.pools.get(id)?.bytes ?? 0;
    return pooled > 0 ? { ...v, used_bytes: Math.max(0, v.used_bytes - pooled) } : v;
  }

  /**
   * A view of this service whose lookups of `volume` answer the row the caller already holds, without a query (the
   * FSAL's per-handle access cache: it loaded and authorized the volume). Paths, the mutex, the quota statements
   * and the other volumes are the service's own; a deleted volume is refused by the quota SQL and by its missing
   * directory.
   */
  bound(volume: Volume): VolumeService {
    const view = Object.create(this) as VolumeService;
    view.get = async (tenantId: string, id: string) => (id === volume.id && tenantId === volume.tenant_id ? volume : this.get(tenantId, id));
    return view;
  }

  /** Gives back every byte reserved ahead (shutdown; tests). */
  async releaseReservations(): Promise<void> {
    await Promise.all([...this.pools.keys()].map((id) => this.mutex.run(id, () => this.releasePool(id))));
  }

  async rename(tenantId: string, id: string, label: string): Promise<Volume> {
    const l = checkLabel(label);
    if (!UUID.test(id)) throw nf(id);
    const row = await repo.renameVolume(this.db, tenantId, id, l);
    if (!row) throw nf(id);
    return repo.toVolume(row);
  }

  /** Removes the volume and everything in it. */
  async delete(tenantId: string, id: string): Promise<void> {
    if (!UUID.test(id)) throw nf(id);
    const live = await repo.findVolume(this.db, tenantId, id);
    if (!live) throw nf(id);
    const row = await repo.markDeleting(this.db, tenantId, id);
    if (!row) throw nf(id);
    if (row.node_id !== this.nodeId) {
      // Its files are on another node; that node's reaper finishes the delete (the volume is gone for callers now).
      this.log.info({ volume: id, node: row.node_id }, 'volume marked for deletion on its node');
      return;
    }
    await this.purge(tenantId, id);
  }

  async quota(tenantId: string, id: string): Promise<VolumeQuota> {
    const v = await this.get(tenantId, id);
    const tree = await treeSize(this.localDir(v));
    return {
      volume_id: v.id,
      size_limit_bytes: v.size_limit_bytes,
      used_bytes: v.used_bytes,
      available_bytes: Math.max(0, v.size_limit_bytes - v.used_bytes),
      file_count: tree.files,
      directory_count: tree.directories,
    };
  }

  /**
   * Re-measures the directory and sets used_bytes to what is on disk. For callers that changed the directory
   * themselves (a git clone into hostPath()); it may leave a volume above its limit, after which writes that grow
   * it are refused until it shrinks.
   */
  async recount(tenantId: string, id: string): Promise<VolumeQuota> {
    const v = await this.get(tenantId, id);
    await this.mutex.run(id, async () => {
      // The row counts what this process reserved ahead; set to the disk, it no longer does: the pool goes back first
      // (given back after, it took its bytes off a row that did not hold them).
      await this.releasePool(id);
      const tree = await treeSize(this.localDir(v));
      if ((await repo.setUsedBytes(this.db, tenantId, id, tree.bytes)) === undefined) throw nf(id);
    });
    return this.quota(tenantId, id);
  }

  /**
   * The host directory of a volume of this node (for bind mounts and tools that work on the directory). Writes made
   * there directly bypass the quota until recount().
   */
  async hostPath(tenantId: string, id: string): Promise<string> {
    return this.localDir(await this.get(tenantId, id));
  }

  // ---------------------------------------------------------------- files

  async listDir(tenantId: string, id: string, dirPath = '/'): Promise<FileInfo[]> {
    const { target } = await this.open(tenantId, id, dirPath, 'read');
    return this.fsOp(target.path, async () => {
      const st = await stat(target.host);
      if (!st.isDirectory()) throw new OrchError(Errors.CONFLICT, `${target.path} is not a directory`, { details: { code: 'ENOTDIR' } });
      const names = await readdir(target.host);
      const out: FileInfo[] = [];
      for (const name of names.sort()) {
        const child = target.path === '/' ? `/${name}` : `${target.path}/${name}`;
        const s = await lstat(path.join(target.host, name)).catch(() => undefined);
        if (s) out.push(fileInfo(child, s));
      }
      return out;
    });
  }

  /** Attributes of a path (a symbolic link itself, not its target). */
  async stat(tenantId: string, id: string, p: string): Promise<FileInfo> {
    const { target } = await this.open(tenantId, id, p, 'entry');
    return this.fsOp(target.path, async () => fileInfo(target.path, await lstat(target.host)));
  }

  /** A whole file (at most `MAX_READ_BYTES`), or `length` bytes from `offset` (fewer at the end of the file). */
  async readFile(tenantId: string, id: string, p: string, range?: { offset: number; length: number }): Promise<Buffer> {
    return (await this.readSized(tenantId, id, p, range)).data;
  }

  /**
   * `length` bytes from `offset` and the file's size, from one open handle: the FSAL's Read answers `eof` with it,
   * where a separate stat would resolve the path a second time.
   */
  readAt(tenantId: string, id: string, p: string, offset: number, length: number): Promise<{ data: Buffer; size: number }> {
    return this.readSized(tenantId, id, p, { offset, length });
  }

  private async readSized(tenantId: string, id: string, p: string, range?: { offset: number; length: number }): Promise<{ data: Buffer; size: number }> {
    const { target } = await this.open(tenantId, id, p, 'read');
    if (range) {
      checkNonNegInt(range.offset, 'offset');
      checkNonNegInt(range.length, 'length');
      if (range.length > MAX_READ_BYTES) throw new OrchError(Errors.BAD_REQUEST, `length must be at most ${MAX_READ_BYTES}`);
    }
    return this.fsOp(target.path, async () => {
      const fh = await open(target.host, 'r');
      try {
        const st = await fh.stat();
        if (st.isDirectory()) throw new OrchError(Errors.CONFLICT, `${target.path} is a directory`, { details: { code: 'EISDIR' } });
        const offset = range?.offset ?? 0;
        const want = range ? Math.max(0, Math.min(range.length, st.size - offset)) : st.size;
        if (!range && st.size > MAX_READ_BYTES) {
          throw new OrchError(Errors.BAD_REQUEST, `${target.path} is ${st.size} bytes; read it in ranges of at most ${MAX_READ_BYTES} bytes or download it`);
        }
        // Not zeroed: only the bytes read are answered (a 1 MiB zero fill per FSAL Read was measurable garbage).
        const buf = Buffer.allocUnsafe(want);
        let got = 0;
        while (got < want) {
          const { bytesRead } = await fh.read(buf, got, want - got, offset + got);
          if (bytesRead === 0) break;
          got += bytesRead;
        }
        return { data: got === want ? buf : buf.subarray(0, got), size: st.size };
      } finally {
        await fh.close();
      }
    });
  }

  /** A file as a stream (downloads), with its attributes. */
  async openRead(tenantId: string, id: string, p: string): Promise<{ info: FileInfo; stream: Readable }> {
    const { target } = await this.open(tenantId, id, p, 'read');
    return this.fsOp(target.path, async () => {
      const fh = await open(target.host, 'r');
      const st = await fh.stat();
      if (!st.isFile()) {
        await fh.close();
        throw new OrchError(Errors.CONFLICT, `${target.path} is not a regular file`, { details: { code: 'EINVAL' } });
      }
      return { info: fileInfo(target.path, st), stream: createReadStream('', { fd: fh, autoClose: true }) as Readable };
    });
  }

  /**
   * Creates or replaces a whole file. Readers see the old file or the new one, never a mix; a write that does not
   * fit is refused with STORAGE_FULL (ENOSPC) and leaves the volume as it was.
   */
  async writeFile(tenantId: string, id: string, p: string, data: WriteData, opts: { createParents?: boolean; exclusive?: boolean } = {}): Promise<WriteResult> {
    const { volume, root, target } = await this.open(tenantId, id, p, 'write');
    if (target.isRoot) throw new OrchError(Errors.CONFLICT, '/ is the volume root, a directory');
    // Optimistic bound for the staging copy: what is free plus what this file already takes.
    const bound = volume.size_limit_bytes - volume.used_bytes + (await this.fsOp(target.path, () => regularFileSize(target.host, target.path)));
    const tmp = await this.stagingFile(id);
    try {
      let written = 0;
      if (typeof data === 'string' || data instanceof Uint8Array) {
        const buf = toBuffer(data);
        if (buf.length > 0 && buf.length > bound) throw storageFull(target.path, buf.length, volume);
        const fh = await open(tmp, 'wx');
        try {
          await fh.writeFile(buf);
        } finally {
          await fh.close();
        }
        written = buf.length;
      } else {
        const fh = await open(tmp, 'wx');
        try {
          for await (const chunk of data) {
            const buf = toBuffer(chunk);
            written += buf.length;
            if (written > bound) throw storageFull(target.path, written, volume);
            await fh.write(buf);
          }
        } finally {
          await fh.close();
        }
      }
      return await this.mutex.run(id, async () => {
        // Resolved again under the mutex: the tree may have changed while the data streamed in.
        const t = await resolveInVolume(root, p, 'write');
        return this.fsOp(t.path, async () => {
          const existing = await lstat(t.host).catch(() => undefined);
          if (existing && opts.exclusive) throw new OrchError(Errors.CONFLICT, `${t.path} already exists`, { details: { code: 'EEXIST' } });
          if (existing?.isDirectory()) throw new OrchError(Errors.CONFLICT, `${t.path} is a directory`, { details: { code: 'EISDIR' } });
          const old = existing?.isFile() ? existing.size : 0;
          const delta = written - old;
          const used = delta === 0 ? volume.used_bytes : await this.reserve(tenantId, id, t.path, delta);
          try {
            // Parents only once the bytes are ours, so a refused write leaves no trace (not even a directory).
            if (opts.createParents !== false) await mkdir(path.dirname(t.host), { recursive: true });
            await rename(tmp, t.host);
          } catch (err) {
            await repo.adjustBytes(this.db, tenantId, id, -delta);
            throw err;
          }
          return { path: t.path, bytes_written: written, size: written, used_bytes: used };
        });
      });
    } catch (err) {
      throw translateFsError(err, target.path);
    } finally {
      await rm(tmp, { force: true }).catch(() => undefined);
    }
  }

  /**
   * Writes `data` at `offset` of an existing file (or a new one with `create`), growing it as needed; the bytes
   * between the old end and `offset` read as zeros and count. The growth is reserved before anything is written.
   */
  async writeAt(tenantId: string, id: string, p: string, offset: number, data: Buffer | Uint8Array, opts: { create?: boolean } = {}): Promise<WriteResult> {
    const { info: _info, ...result } = await this.writeAtStat(tenantId, id, p, offset, data, opts);
    return result;
  }

  /**
   * writeAt, also answering the file's attributes after the write, read from the handle it wrote through (the FSAL's
   * Write answers them; a stat before and after resolved the path twice more). A directory is EISDIR.
   */
  async writeAtStat(tenantId: string, id: string, p: string, offset: number, data: Buffer | Uint8Array, opts: { create?: boolean } = {}): Promise<WriteResult & { info: FileInfo }> {
    checkNonNegInt(offset, 'offset');
    const buf = toBuffer(data);
    // The path is resolved (the symlink check) once, under the volume's mutex, where the write happens: resolving it
    // before taking the mutex as well cost two filesystem round trips per write and decided nothing the second
    // resolution does not. The root is refused by its normal form.
    if (normalizeVolumePath(p) === '/') throw new OrchError(Errors.CONFLICT, '/ is the volume root, a directory');
    const root = this.localDir(await this.get(tenantId, id));
    return this.mutex.run(id, async () => {
      const t = await this.resolveIn(id, root, p, 'write');
      return this.fsOp(t.path, async () => {
        const existing = await lstat(t.host).catch((err: NodeJS.ErrnoException) => {
          if (err.code === 'ENOENT') return undefined;
          throw err;
        });
        if (!existing && !opts.create) throw new OrchError(Errors.NOT_FOUND, `${t.path} does not exist`, { details: { code: 'ENOENT' } });
        if (existing?.isDirectory()) throw new OrchError(Errors.CONFLICT, `${t.path} is a directory`, { details: { code: 'EISDIR' } });
        if (existing && !existing.isFile()) throw new OrchError(Errors.CONFLICT, `${t.path} is not a regular file`, { details: { code: 'EINVAL' } });
        const old = existing?.size ?? 0;
        const size = Math.max(old, offset + buf.length);
        const delta = size - old;
        let used = delta > 0 ? await this.reserve(tenantId, id, t.path, delta) : undefined;
        const fh = await open(t.host, existing ? 'r+' : 'wx').catch(async (err: unknown) => {
          await repo.adjustBytes(this.db, tenantId, id, -delta);
          throw err;
        });
        let info: FileInfo;
        try {
          let done = 0;
          while (done < buf.length) {
            const { bytesWritten } = await fh.write(buf, done, buf.length - done, offset + done);
            done += bytesWritten;
          }
          info = fileInfo(t.path, await fh.stat());
        } catch (err) {
          // Settle to what the file really became.
          const real = (await fh.stat().catch(() => undefined))?.size ?? old;
          await repo.adjustBytes(this.db, tenantId, id, real - size);
          throw err;
        } finally {
          await fh.close();
        }
        used ??= (await this.get(tenantId, id)).used_bytes;
        return { path: t.path, bytes_written: buf.length, size, used_bytes: used, info };
      });
    });
  }

  /** Sets a file's length (FSAL SetAttr/truncate); growing reserves the difference first. */
  async truncate(tenantId: string, id: string, p: string, size: number): Promise<WriteResult> {
    checkNonNegInt(size, 'size');
    const { root, target } = await this.open(tenantId, id, p, 'write');
    return this.mutex.run(id, async () => {
      const t = await resolveInVolume(root, p, 'write');
      return this.fsOp(t.path, async () => {
        const st = await lstat(t.host);
        if (!st.isFile()) throw new OrchError(Errors.CONFLICT, `${t.path} is not a regular file`, { details: { code: 'EINVAL' } });
        const delta = size - st.size;
        const used = await this.reserve(tenantId, id, t.path, delta);
        const fh = await open(t.host, 'r+');
        try {
          await fh.truncate(size);
        } catch (err) {
          await repo.adjustBytes(this.db, tenantId, id, -delta);
          throw err;
        } finally {
          await fh.close();
        }
        return { path: target.path, bytes_written: 0, size, used_bytes: used };
      });
    });
  }

  /**
   * Marks a regular file modified now, changing no byte and no quota (the FSAL's Write of no bytes, which is what a
   * FUSE mount's utimens/`touch` is made of). CONFLICT for a directory or anything but a regular file.
   */
  async touch(tenantId: string, id: string, p: string): Promise<FileInfo> {
    const { target } = await this.open(tenantId, id, p, 'write');
    if (target.isRoot) throw new OrchError(Errors.CONFLICT, '/ is the volume root, a directory');
    return this.fsOp(target.path, async () => {
      const st = await lstat(target.host);
      if (!st.isFile()) throw new OrchError(Errors.CONFLICT, `${target.path} is not a regular file`, { details: { code: st.isDirectory() ? 'EISDIR' : 'EINVAL' } });
      const fh = await open(target.host, 'r+');
      try {
        const now = new Date();
        await fh.utimes(now, now);
        return fileInfo(target.path, await fh.stat());
      } finally {
        await fh.close();
      }
    });
  }

  /** An empty file; `exclusive` refuses an existing path (CONFLICT), else an existing file is emptied. */
  async createFile(tenantId: string, id: string, p: string, opts: { exclusive?: boolean } = {}): Promise<FileInfo> {
    if (opts.exclusive) {
      // A new empty file takes no bytes: no staging copy, no reservation. O_CREAT|O_EXCL refuses an existing name
      // (a symbolic link included, which it never follows); a missing parent is ENOENT, as before.
      const { target } = await this.open(tenantId, id, p, 'write');
      if (target.isRoot) throw new OrchError(Errors.CONFLICT, '/ is the volume root, a directory');
      return this.fsOp(target.path, async () => {
        const fh = await open(target.host, 'wx');
        try {
          return fileInfo(target.path, await fh.stat());
        } finally {
          await fh.close();
        }
      });
    }
    const w = await this.writeFile(tenantId, id, p, Buffer.alloc(0), { exclusive: opts.exclusive ?? false, createParents: false });
    return this.stat(tenantId, id, w.path);
  }

  /** A directory; with `parents` (default) its missing parents too and an existing directory is fine. */
  async mkdir(tenantId: string, id: string, p: string, opts: { parents?: boolean } = {}): Promise<FileInfo> {
    const { target } = await this.open(tenantId, id, p, 'write');
    const parents = opts.parents ?? true;
    return this.mutex.run(id, () =>
      this.fsOp(target.path, async () => {
        const existing = await lstat(target.host).catch(() => undefined);
        if (existing && !existing.isDirectory()) throw new OrchError(Errors.CONFLICT, `${target.path} already exists and is not a directory`, { details: { code: 'EEXIST' } });
        if (existing && !parents) throw new OrchError(Errors.CONFLICT, `${target.path} already exists`, { details: { code: 'EEXIST' } });
        await mkdir(target.host, { recursive: parents });
        return fileInfo(target.path, await lstat(target.host));
      }),
    );
  }

  /** Moves or renames a file or directory inside the volume; `overwrite` lets it replace a file. */
  async move(tenantId: string, id: string, from: string, to: string, opts: { overwrite?: boolean } = {}): Promise<FileInfo> {
    const { root, target: src } = await this.open(tenantId, id, from, 'entry');
    const dst = await resolveInVolume(root, to, 'write');
    if (src.isRoot || dst.isRoot) throw new OrchError(Errors.BAD_REQUEST, 'the volume root cannot be moved or replaced');
    return this.mutex.run(id, () =>
      this.fsOp(src.path, async () => {
        const s = await resolveEntry(root, from);
        const d = await resolveInVolume(root, to, 'write');
        await lstat(s.host);
        if (s.path === d.path) return fileInfo(d.path, await lstat(d.host));
        if (d.path.startsWith(`${s.path}/`)) throw new OrchError(Errors.BAD_REQUEST, `cannot move ${s.path} into itself (${d.path})`);
        const existing = await lstat(d.host).catch(() => undefined);
        let freed = 0;
        if (existing) {
          if (!opts.overwrite) throw new OrchError(Errors.CONFLICT, `${d.path} already exists`, { details: { code: 'EEXIST' } });
          if (existing.isDirectory()) throw new OrchError(Errors.CONFLICT, `${d.path} is a directory`, { details: { code: 'EISDIR' } });
          freed = existing.isFile() ? existing.size : 0;
        }
        await mkdir(path.dirname(d.host), { recursive: true });
        await rename(s.host, d.host);
        await repo.adjustBytes(this.db, tenantId, id, -freed);
        return fileInfo(d.path, await lstat(d.host));
      }),
    );
  }

  /** Deletes a file, or a directory (a non-empty one only with `recursive`); gives its bytes back. */
  async remove(tenantId: string, id: string, p: string, opts: { recursive?: boolean } = {}): Promise<RemoveResult> {
    const { root, target } = await this.open(tenantId, id, p, 'entry');
    if (target.isRoot) throw new OrchError(Errors.BAD_REQUEST, 'the volume root cannot be deleted; delete the volume instead');
    return this.mutex.run(id, async () => {
      const t = await resolveEntry(root, p);
      return this.fsOp(t.path, async () => {
        const st = await lstat(t.host);
        if (st.isDirectory() && !opts.recursive && (await readdir(t.host)).length > 0) {
          throw new OrchError(Errors.CONFLICT, `${t.path} is a non-empty directory; pass recursive=true`, { details: { code: 'ENOTEMPTY' } });
        }
        const before = await treeSize(t.host);
        try {
          await rm(t.host, { recursive: true });
        } catch (err) {
          const left = await treeSize(t.host);
          await repo.adjustBytes(this.db, tenantId, id, -(before.bytes - left.bytes));
          throw err;
        }
        await repo.adjustBytes(this.db, tenantId, id, -before.bytes);
        return { path: t.path, freed_bytes: before.bytes };
      });
    });
  }

  // ---------------------------------------------------------------- reaper

  /** Removes this node's expired volumes and finishes deletes started elsewhere; answers how many it removed. */
  async reapOnce(batch = 100): Promise<number> {
    const due = await repo.dueForReaping(this.db, this.nodeId, batch);
    let removed = 0;
    for (const v of due) {
      try {
        if (v.status !== 'deleting') await repo.markDeleting(this.db, v.tenant_id, v.id);
        await this.purge(v.tenant_id, v.id);
        removed += 1;
        this.log.info({ volume: v.id, tenant: v.tenant_id, reason: v.status === 'deleting' ? 'deleted' : 'expired' }, 'volume reaped');
      } catch (err) {
        this.log.error({ err, volume: v.id }, 'reaping a volume failed; the next pass tries again');
      }
    }
    return removed;
  }

  /**
   * Repairs what a crash can leave behind: re-measures every active volume of this node (a process that died
   * between reserving bytes and renaming its file leaves used_bytes too high) and removes staging files older than
   * `staleMs` (writes that never finished). Run by the reaper's first pass, before this node serves writes.
   */
  async reconcile(staleMs = 60 * 60 * 1000): Promise<{ volumes: number; corrected: number; staging_removed: number }> {
    let corrected = 0;
    const rows = await repo.activeVolumesOfNode(this.db, this.nodeId);
    for (const r of rows) {
      await this.mutex.run(r.id, async () => {
        const dir = this.dirOf(r.id);
        if (!(await stat(dir).catch(() => undefined))) return;
        await this.releasePool(r.id);
        const tree = await treeSize(dir);
        const now = await repo.findAnyVolume(this.db, r.tenant_id, r.id);
        if (now && now.status === 'active' && Number(now.used_bytes) !== tree.bytes) {
          await repo.setUsedBytes(this.db, r.tenant_id, r.id, tree.bytes);
          this.log.warn({ volume: r.id, recorded: Number(now.used_bytes), on_disk: tree.bytes }, 'volume usage corrected to what is on disk');
          corrected += 1;
        }
      });
    }
    let removed = 0;
    const cutoff = Date.now() - staleMs;
    for (const sub of await readdir(this.stagingDir).catch(() => [] as string[])) {
      const dir = path.join(this.stagingDir, sub);
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        const file = path.join(dir, name);
        const st = await lstat(file).catch(() => undefined);
        if (st && st.mtimeMs < cutoff) {
          await rm(file, { force: true });
          removed += 1;
        }
      }
    }
    return { volumes: rows.length, corrected, staging_removed: removed };
  }

  /** Runs reconcile once, then reapOnce every `intervalMs` (first pass at once) until stop(). */
  startReaper(intervalMs: number, opts: { reconcile?: boolean } = {}): VolumeReaper {
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    let inFlight: Promise<number> | undefined;
    let reconciled = opts.reconcile === false;
    const pass = (): Promise<number> => {
      inFlight ??= (async () => {
        if (!reconciled) {
          reconciled = true;
          await this.reconcile().catch((err: unknown) => this.log.error({ err }, 'volume reconcile failed'));
        }
        return this.reapOnce();
      })()
        .catch((err: unknown) => {
          this.log.error({ err }, 'volume reaper pass failed');
          return 0;
        })
        .finally(() => (inFlight = undefined));
      return inFlight;
    };
    const tick = (): void => {
      if (stopped) return;
      // never-rejects: pass() catches and logs every failure of a reaper pass.
      void pass().finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs).unref();
      });
    };
    tick();
    return {
      runOnce: pass,
      stop: async () => {
        stopped = true;
        if (timer) clearTimeout(timer);
        await inFlight;
      },
    };
  }

  // ---------------------------------------------------------------- internals

  private dirOf(id: string): string {
    return path.join(this.volumesDir, id);
  }

  /** The directory of a volume of this node; a volume of another node is UNAVAILABLE here. */
  private localDir(v: Volume): string {
    if (v.node_id !== this.nodeId) throw new OrchError(Errors.UNAVAILABLE, `volume ${v.id} is stored on node ${v.node_id}; call that node`);
    return this.dirOf(v.id);
  }

  /** The live volume, its root and the caller's path resolved inside it (`entry`: the link itself, see resolveEntry). */
  private async open(tenantId: string, id: string, p: string, mode: 'read' | 'write' | 'entry'): Promise<{ volume: Volume; root: string; target: VolumePath }> {
    normalizeVolumePath(p);
    const volume = await this.get(tenantId, id);
    const root = this.localDir(volume);
    return { volume, root, target: await this.resolveIn(id, root, p, mode) };
  }

  /** `p` under the volume's directory `root`, with the symlink check. */
  private resolveIn(id: string, root: string, p: string, mode: 'read' | 'write' | 'entry'): Promise<VolumePath> {
    // A volume whose directory is gone (removed under us) is not found rather than silently made again.
    return this.fsOp(p, () => (mode === 'entry' ? resolveEntry(root, p) : resolveInVolume(root, p, mode))).catch((err: unknown) => {
      throw err instanceof OrchError && err.spec === Errors.NOT_FOUND ? nf(id) : err;
    });
  }

  /**
   * Reserves `delta` bytes (or gives back a negative one); STORAGE_FULL or NOT_FOUND when refused. Called under the
   * volume's mutex.
   *
   * With quotaChunkBytes, growth is taken from the bytes this process reserved ahead, and a reservation that runs
   * short takes the shortfall plus up to a chunk in one statement (never more than an eighth of what is free, so a
   * nearly full volume is reserved write by write). When even the shortfall alone is refused, the pool is given back
   * and the write fails with ENOSPC: within this process (the node, which serves FSAL and FUSE) a write is refused
   * only when the volume's real usage plus the write passes the limit. Another process writing the same volume can
   * be refused early by at most this process's unused pool, for at most quotaIdleMs. A crash loses the pool with
   * used_bytes too high by it; reconcile() (the reaper's first pass) re-measures.
   */
  private async reserve(tenantId: string, id: string, shown: string, delta: number): Promise<number> {
    if (this.quotaChunk > 0 && delta > 0) return this.reservePooled(tenantId, id, shown, delta);
    if (delta < 0 && this.pools.has(id)) await this.releasePool(id);
    const used = await repo.reserveBytes(this.db, tenantId, id, delta);
    if (used !== undefined) return used;
    throw await this.refusal(tenantId, id, shown, delta);
  }

  private async reservePooled(tenantId: string, id: string, shown: string, delta: number): Promise<number> {
    let pool = this.pools.get(id);
    if (!pool) {
      pool = { tenantId, bytes: 0, dbUsed: 0 };
      this.pools.set(id, pool);
    }
    if (pool.timer) clearTimeout(pool.timer);
    const p = pool;
    p.timer = setTimeout(() => void this.mutex.run(id, () => this.releasePool(id)).catch((err: unknown) => this.log.warn({ err, volume: id }, 'giving back reserved quota failed; reconcile() re-measures')), this.quotaIdleMs).unref();
    if (p.bytes >= delta) {
      p.bytes -= delta;
      return p.dbUsed - p.bytes;
    }
    const short = delta - p.bytes;
    const ahead = await this.poolStatement(id, async () => {
      const a = await repo.reserveAhead(this.db, tenantId, id, short, this.quotaChunk);
      if (a) {
        p.bytes += a.reserved - delta;
        p.dbUsed = a.used;
      }
      return a;
    });
    if (ahead) return p.dbUsed - p.bytes;
    await this.releasePool(id);
    throw await this.refusal(tenantId, id, shown, delta);
  }

  /**
   * Gives the unused rest of the volume's pool back to used_bytes (under the volume's mutex). The pool leaves the
   * map only once the UPDATE is done: releaseReservations() (and get()) must see a release in flight — an idle
   * timer's release that had already left the map let releaseReservations() return before its bytes were back.
   * A failed UPDATE keeps the pool (its bytes are still counted in SQL) for the next release.
   */
  private async releasePool(id: string): Promise<void> {
    const p = this.pools.get(id);
    if (!p) return;
    if (p.timer) clearTimeout(p.timer);
    p.timer = undefined;
    await this.poolStatement(id, async () => {
      if (p.bytes > 0) await repo.adjustBytes(this.db, p.tenantId, id, -p.bytes);
      if (this.pools.get(id) === p) this.pools.delete(id);
    });
  }

  /**
   * Runs a statement that moves bytes between the row and the pool, with the pool's update after its answer; the
   * volume's poolSeq is odd meanwhile (get()). Called under the volume's mutex.
   */
  private async poolStatement<T>(id: string, fn: () => Promise<T>): Promise<T> {
    let s = this.poolSeq.get(id);
    if (!s) {
      s = { n: 0 };
      this.poolSeq.set(id, s);
    }
    s.n += 1;
    try {
      return await fn();
    } finally {
      s.n += 1;
    }
  }

  private async refusal(tenantId: string, id: string, shown: string, delta: number): Promise<OrchError> {
    const v = await repo.findVolume(this.db, tenantId, id);
    if (!v) return nf(id);
    return storageFull(shown, delta, repo.toVolume(v));
  }

  private async stagingFile(id: string): Promise<string> {
    const dir = path.join(this.stagingDir, id);
    await mkdir(dir, { recursive: true });
    return path.join(dir, `${randomUUID()}.tmp`);
  }

  private async fsOp<T>(shown: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw translateFsError(err, shown);
    }
  }

  /** Removes the files, then the row, of a volume already marked `deleting`. */
  private async purge(tenantId: string, id: string): Promise<void> {
    await this.mutex.run(id, async () => {
      await this.releasePool(id);
      await rm(this.dirOf(id), { recursive: true, force: true });
      await rm(path.join(this.stagingDir, id), { recursive: true, force: true });
      await repo.deleteRow(this.db, tenantId, id);
      this.poolSeq.delete(id);
    });
    this.log.info({ volume: id, tenant: tenantId }, 'volume deleted');
  }
}
