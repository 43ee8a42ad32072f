// The kernel's view of one volume: each FUSE operation is one or more FsalService calls, so the FSAL's checks
// (ownership, filesystem policy, access mode, quota, squashing, StorageEvents) apply to everything a process in the
// mount does. Paths from the kernel are absolute in the mount (`/a/b`), which the FSAL takes as volume-relative.
//
// The seed's FsalService has no SetAttr, so the attribute changes are made of what it has:
// - utimens (`touch`, tar, `cp -p`, git's copy of an object file's times) is a Write of no bytes, which the FSAL
//   authorizes like any write (ownership, policy, read-only → EROFS), records, and answers by marking the file
//   modified now. A requested time other than now is not kept: the file shows the time of the call. On a
//   directory it is checked the same way and changes nothing (a directory's mtime is its last entry change).
// - chmod and chown succeed only to the mode or owner a file already shows (owners are squashed), else EPERM.
// - truncate is made of Create (which truncates to zero), Read and Write.
// - statfs (df) answers the volume's quota as the size and quota minus used as free, in 4 KiB blocks (statfsOf).
// Not provided, so the kernel answers ENOSYS: symlinks, hard links, xattrs.
import { constants as fsConstants } from 'node:fs';
import { constants as os } from 'node:os';
import type { FileAttributes } from '../gen/orch/fsal/v1/fsal.js';
import type { Logger } from '../logging/logger.ts';
import type { FuseOperations, FuseStatfs, FuseStats } from './binding.ts';
import { status } from '@grpc/grpc-js';
import { errnoFor, FsalCallError, type FsalRemote, type FsalWriteStream } from './fsal-client.ts';

/** Largest Write sent in one FSAL call, and the size of a write-behind buffer. */
const CHUNK = 1024 * 1024;
/**
 * The smallest write-behind buffer: a kernel write is up to 1 MiB (libfuse 3) or 128 KiB (libfuse 2.9); a file that
 * needs more grows its buffer.
 */
const FIRST_BUFFER = 64 * 1024;
const EMPTY = Buffer.alloc(0);
/**
 * Read-ahead per open file: the kernel reads in requests of 128 KiB (its readahead window) up to 1 MiB; one FSAL Read
 * of 2 MiB (the FSAL's largest) serves several, and the next block is fetched while the current one is served.
 * Blocks are kept for that open file only and dropped by any change made through this mount to the path, and on
 * release: close-to-open consistency, as NFS gives.
 */
const READ_AHEAD = 2 * 1024 * 1024;
/**
 * Write-behind: a kernel write (1 MiB at most) is copied into a 1 MiB buffer per path and answered at once; full
 * buffers go to the FSAL as one Write each, in order, while the kernel sends the next. A write waits once this many
 * bytes of the path are buffered or in flight. flush (every close), fsync, and any operation that reads the path's
 * size or data (getattr, read, truncate, rename, readdir) wait for the path's Writes first, so what the mount shows
 * is what was written. A Write the FSAL refuses (ENOSPC, EROFS, a policy refusal) is answered to the next write,
 * flush or fsync of the path, as NFS reports an asynchronous write's error; each FSAL Write is still whole or
 * refused, and the quota exact.
 */
const WRITE_BEHIND_MAX = 8 * 1024 * 1024;
/** How long the daemon answers getattr from what it learned itself (Create, its own writes): the kernel's attr cache. */
const ATTR_TTL_MS = 1000;
/**
 * How long the daemon answers ENOENT for a name the FSAL just said is missing, unless the name is made through the
 * mount: the kernel's negative_timeout (src/fuse/binding.ts). The kernel asks again itself before an exclusive create
 * (O_CREAT|O_EXCL, as git's checkout opens every file) whatever it remembers; that second lookup is answered here.
 * A name made by another path in that second is not hidden from such a create: the FSAL's exclusive Create refuses
 * it (EEXIST), as the disk would.
 */
const MISSING_TTL_MS = 1000;
/** The most names a made directory's listing may hold for relist to renew its entry (one ReadDir page). */
const RELIST_MAX = 1000;
/** The most entries each of the daemon's caches of attributes and names keeps per mount. */
const CACHE_MAX = 10_000;

export interface FsalOperationsOptions {
  /**
   * How long the daemon answers lookups of missing names itself (MISSING_TTL_MS; and, for a directory this mount made,
   * every name it did not make there). Tests lengthen it to make the count of FSAL calls independent of the load.
   */
  namesCacheMs?: number;
  /** The most entries each cache keeps (CACHE_MAX); tests make it small. */
  cacheMax?: number;
  /**
   * The binding's invalidation of a path's kernel entry, attributes and pages (libfuse 3; src/fuse/mounts.ts binds it
   * once the mount exists). Used when an open finds the file changed by another path: its pages are dropped by the
   * open anyway; this drops the kernel's size too, which would otherwise stand for up to attr_timeout.
   */
  invalidate?: (path: string) => Promise<number>;
  /**
   * The mount is read-only (the FSAL's access mode, src/fuse/mounts.ts; the kernel mount is `ro` too): an open for
   * writing is refused EROFS here as well, should a binding not pass `ro` on.
   */
  readOnly?: boolean;
  /** Sees every kernel read and write request (its length) as the binding delivers it: tests count them. */
  observe?: (op: 'read' | 'write', len: number) => void;
}

/** A directory this mount made (fsalOperations' madeDirs): its names, known until `until`. */
interface MadeDir {
  until: number;
  names: Set<string>;
  /** The listing renewing it, once expired (relist). */
  relisting?: Promise<MadeDir | undefined>;
}

interface Block {
  path: string;
  offset: number;
  data: Buffer;
  eof: boolean;
}

interface OpenFile {
  block?: Block;
  /** The block after `block`, being fetched. */
  next?: { path: string; offset: number; promise: Promise<Block> };
  /** Where the last read served on this open file ended: a read starting there goes on sequentially. */
  end?: number;
}

/**
 * A kernel read shorter than this, not at the start of the file nor where the open file's last read ended, is a lone
 * page or two the page cache lacks amid pages it has (a write through the mount leaves a page not up to date when its
 * copy from the writer's buffer was cut short): it is fetched as asked, without a read-ahead block. Readahead asks
 * for 128 KiB and more.
 */
const LONE_READ = 128 * 1024;

/** The write-behind queue of one path. */
class WriteBehind {
  private buf: Buffer | undefined;
  /**
   * A large file's buffer is the data part of `raw`, after `room` bytes where its Write request's other fields are
   * encoded at ship (writeEncoded): the buffer is sent as it is. Such buffers are reused once their Write is answered
   * (`free`, at most what may be in flight), so a long `dd` allocates a handful rather than one per MiB.
   */
  private raw: Buffer | undefined;
  private readonly room: number;
  private readonly free: Buffer[] = [];
  private start = 0;
  private len = 0;
  /** Settles once every Write shipped so far is answered (or refused). */
  private chain: Promise<void> = Promise.resolve();
  /**
   * Settles once the last unary Write shipped is answered: a streamed Write is sent only after it, so the FSAL applies
   * the path's Writes in the order shipped whichever way each goes.
   */
  private unaryTail: Promise<void> = Promise.resolve();
  /** Unary Writes replaying streamed ones the node did not take (UNIMPLEMENTED), in order. */
  private replay: Promise<void> = Promise.resolve();
  private stream: FsalWriteStream | undefined;
  private queued = 0;
  /** Writers waiting for the bytes in flight to fall under WRITE_BEHIND_MAX. */
  private waiters: (() => void)[] = [];
  private error: unknown;
  /** A whole CHUNK of this path was buffered: it is a large file, give it CHUNK-sized buffers from now on. */
  private filled = false;

  constructor(
    private readonly remote: FsalRemote,
    private readonly path: string,
    /** The file's attributes after each Write, as the FSAL answered them. */
    private readonly written: (attributes: FileAttributes) => void,
    /** A Write was refused: bytes the kernel was told were written are not in the file. */
    private readonly refused: () => void = () => undefined,
  ) {
    this.room = remote.writeRoom(path);
  }

  idle(): boolean {
    return this.queued === 0 && this.len === 0 && this.error === undefined;
  }

  async write(src: Buffer, len: number, pos: number): Promise<void> {
    this.raise();
    let done = 0;
    while (done < len) {
      if (this.buf && pos + done === this.start + this.len && this.len === this.buf.length && this.buf.length < CHUNK) {
        // The file goes on past a small buffer: grow it (doubling, up to CHUNK) rather than ship a small Write.
        const bigger = Buffer.allocUnsafe(Math.min(CHUNK, this.buf.length * 2));
        this.buf.copy(bigger, 0, 0, this.len);
        this.buf = bigger;
        this.raw = undefined;
      }
      if (!this.buf || pos + done !== this.start + this.len || this.len === this.buf.length) {
        this.ship();
        // Most files are small: a new buffer starts at what this write needs (at least FIRST_BUFFER) unless the path
        // has filled a whole CHUNK already. A 1 MiB buffer per file made a checkout's writes mostly garbage.
        if (this.filled && this.remote.streams) {
          this.raw = this.free.pop() ?? Buffer.allocUnsafe(this.room + CHUNK);
          this.buf = this.raw.subarray(this.room, this.room + CHUNK);
        } else this.buf = Buffer.allocUnsafe(this.filled ? CHUNK : Math.min(CHUNK, Math.max(FIRST_BUFFER, len - done)));
        this.start = pos + done;
        this.len = 0;
      }
      const n = Math.min(len - done, this.buf.length - this.len);
      src.copy(this.buf, this.len, done, done + n);
      this.len += n;
      done += n;
      if (this.len === CHUNK) {
        this.filled = true;
        this.ship();
      }
    }
    // Room is made as each Write is answered (not only once all are: streamed Writes keep the line full).
    while (this.queued > WRITE_BEHIND_MAX) await new Promise<void>((resolve) => this.waiters.push(resolve));
    this.raise();
  }

  /** Sends what is buffered and waits for every Write of the path; throws the first refusal (once). */
  async flush(): Promise<void> {
    await this.drained();
    this.raise();
  }

  /** Sends what is buffered and waits for every Write of the path, leaving a refusal for the writer to hear. */
  async drained(): Promise<void> {
    this.ship();
    await this.chain;
    // Every Write answered: the path's stream, if any, ends (a close ends it; the next large write opens another).
    if (this.queued === 0 && this.stream) {
      this.stream.end();
      this.stream = undefined;
    }
  }

  private ship(): void {
    if (!this.buf || this.len === 0) return;
    const data = this.buf.subarray(0, this.len);
    const at = this.start;
    const raw = this.raw;
    this.buf = undefined;
    this.raw = undefined;
    this.len = 0;
    this.queued += data.length;
    // A large file's Writes go over one stream (FsalExtensionService.WriteStream, an orch extension): each is sent while
    // the one before is applied, and still whole or refused, in order. A small file's single Write goes as a unary
    // FsalService Write (a stream would cost it a call of its own and more).
    const done = this.filled && this.remote.streams ? this.streamed(at, data, raw) : (this.unaryTail = this.chain.then(() => this.unary(at, data)));
    const settled = done
      .catch((err: unknown) => {
        // The first refusal is the one the kernel hears of; the Writes streamed after it were not applied.
        if (this.error === undefined) {
          this.error = err;
          this.refused();
        }
      })
      .finally(() => {
        this.queued -= data.length;
        for (const w of this.waiters.splice(0)) w();
      });
    this.chain = Promise.all([this.chain, settled]).then(() => undefined);
  }

  /** A unary FsalService Write, unless an earlier Write of the path was refused (then nothing more is sent). */
  private async unary(at: number, data: Buffer): Promise<void> {
    if (this.error !== undefined) return;
    const res = await this.remote.write(this.path, at, data);
    if (res.attributes) this.written(res.attributes);
  }

  /** A Write over the path's stream, sent once the unary Writes before it are answered. */
  private async streamed(at: number, data: Buffer, raw: Buffer | undefined): Promise<void> {
    await this.unaryTail;
    if (this.error !== undefined) return;
    if (!this.stream?.open) this.stream = this.remote.writeStream();
    try {
      const request = raw ? this.remote.writeEncoded(this.path, at, raw, this.room, data.length) : this.remote.writeRequest(this.path, at, data);
      const res = await this.stream.write(request);
      if (res.attributes) this.written(res.attributes);
      // Answered: grpc-js framed (copied) the request long before; the buffer may hold the next MiB.
      if (raw && this.free.length < WRITE_BEHIND_MAX / CHUNK + 1) this.free.push(raw);
    } catch (err) {
      if (!(err instanceof FsalCallError && err.code === status.UNIMPLEMENTED)) throw err;
      // A node without the stream applied none of them: the same Writes go as unary calls, in order.
      this.remote.streams = false;
      await (this.replay = this.replay.then(() => this.unary(at, data)));
    }
  }

  private raise(): void {
    if (this.error === undefined) return;
    const err = this.error;
    this.error = undefined;
    throw err;
  }
}

function neg(errno: string): number {
  return -(os.errno[errno as keyof typeof os.errno] ?? os.errno.EIO);
}

/** open(2)'s access mode bits (O_ACCMODE: O_RDONLY, O_WRONLY or O_RDWR). */
const ACCESS_MODE = 3;
/** The block size statfs answers in: what the mount's files show as st_blksize (toStats). */
const STATFS_BLOCK = 4096;

/**
 * statfs's answer for a volume of `limit` bytes of which `used` are taken: the quota is the size, what is left of it
 * free and available (a write past it is ENOSPC), in whole blocks (free rounded down, so `df` never promises a byte
 * the quota refuses). The FSAL counts no files, so the file counts are 0 (as many network filesystems answer).
 */
export function statfsOf(limit: number, used: number): FuseStatfs {
  const blocks = Math.ceil(limit / STATFS_BLOCK);
  const free = Math.max(0, Math.floor((limit - used) / STATFS_BLOCK));
  return { bsize: STATFS_BLOCK, frsize: STATFS_BLOCK, blocks, bfree: free, bavail: free, files: 0, ffree: 0, favail: 0, fsid: 0, flag: 0, namemax: 255 };
}

export function toStats(a: FileAttributes): FuseStats {
  const mtime = new Date(a.mtime_unix_ms);
  return {
    mode: (a.is_dir ? 0o040000 : 0o100000) | (a.mode & 0o7777),
    uid: a.uid,
    gid: a.gid,
    size: a.size,
    dev: 0,
    nlink: a.is_dir ? 2 : 1,
    ino: 0,
    rdev: 0,
    blksize: 4096,
    blocks: Math.ceil(a.size / 512),
    atime: mtime,
    mtime,
    ctime: mtime,
  };
}

export function fsalOperations(remote: FsalRemote, logger: Logger, options: FsalOperationsOptions = {}): FuseOperations {
  const namesTtl = options.namesCacheMs ?? MISSING_TTL_MS;
  const cacheMax = options.cacheMax ?? CACHE_MAX;
  const log = logger.child({ component: 'fuse-ops', volume_id: remote.target.volume_id });
  let nextFd = 1;
  const files = new Map<number, OpenFile>();
  const dirty = new Map<string, WriteBehind>();
  const attrs = new Map<string, { a: FileAttributes; until: number }>();
  /**
   * What the kernel's cached pages of a path are of: the size and mtime the FSAL showed when the path was last opened
   * (its pages then kept or dropped) or answered the mount's own last Write, Create or utimens with. An open keeps the
   * pages (libfuse 3's keep_cache) only when the FSAL still shows these: a file the mount just wrote reads back from
   * the page cache, and one changed by another path (a tool through the VolumeService) is read afresh. Never set from
   * a getattr: a stat after a change made elsewhere must not make the stale pages look current. No expiry (the pages
   * have none); dropped by any other change through the mount (forget) and kept under cacheMax entries.
   */
  const cached = new Map<string, { size: number; mtime: number; until: number }>();
  /**
   * Paths a Write of was refused (ENOSPC, EROFS, ...) since their last open: the kernel holds pages of bytes it was
   * told were written and the file does not have, so no later Write's answer may make those pages look current.
   */
  const refused = new Set<string>();
  const pagesOf = (path: string, a: FileAttributes): void => {
    if (!refused.has(path)) remember(cached, path, { size: a.size, mtime: a.mtime_unix_ms, until: Infinity });
  };
  const missing = new Map<string, number>();
  /**
   * Directories this mount made, while young: a new directory is empty, so a name in it that this mount did not make
   * there is missing, and its lookup (a checkout looks up every file before creating it) needs no FSAL call. Kept
   * namesTtl, as missing names are; a name made there by another path in that time shows once it has passed (an
   * exclusive create of it is still refused by the FSAL). Any failed change in the directory drops its entry. Once
   * namesTtl has passed, the next lookup of a name in it renews the entry from a listing (relist): one ReadDir per
   * namesTtl rather than a GetAttr per new name while a loop keeps filling the directory.
   */
  const madeDirs = new Map<string, MadeDir>();
  /**
   * Sets an entry of one of the caches above, keeping each under cacheMax entries: entries are dropped only when
   * looked up after they expire, so a long mount's names (a clone of 100,000 files) would otherwise stay for good.
   */
  function remember<V extends { until: number } | number>(map: Map<string, V>, key: string, value: V): void {
    if (map.size >= cacheMax && !map.has(key)) {
      const now = Date.now();
      for (const [k, v] of map) if ((typeof v === 'number' ? v : v.until) <= now) map.delete(k);
      // All still fresh (a burst): forget the oldest half rather than grow.
      if (map.size >= cacheMax) for (const k of [...map.keys()].slice(0, Math.ceil(cacheMax / 2))) map.delete(k);
    }
    map.set(key, value);
  }
  const parentOf = (p: string): string => {
    const i = p.lastIndexOf('/');
    return i <= 0 ? '/' : p.slice(0, i);
  };
  const nameOf = (p: string): string => p.slice(p.lastIndexOf('/') + 1);
  /** Records a name made (true) or removed (false) through the mount in a directory it made. */
  function named(p: string, exists: boolean): void {
    const d = madeDirs.get(parentOf(p));
    if (!d) return;
    if (exists) d.names.add(nameOf(p));
    else d.names.delete(nameOf(p));
  }
  /** A change in the directory of `p` failed: what it holds is no longer known. */
  function unsure(p: string): void {
    madeDirs.delete(parentOf(p));
  }
  /** Runs a change of `paths`' directories, keeping madeDirs right: `done` on success, `unsure` on failure. */
  async function changing<T>(paths: string[], fn: () => Promise<T>, done: () => void): Promise<T> {
    try {
      const out = await fn();
      done();
      return out;
    } catch (err) {
      for (const p of paths) unsure(p);
      throw err;
    }
  }

  const under = (p: string, root: string): boolean => p === root || p.startsWith(root === '/' ? '/' : `${root}/`);

  /** Drops what the daemon keeps of `paths` (read blocks, attributes) after a change through the mount. */
  function forget(...paths: string[]): void {
    for (const f of files.values()) {
      if (f.block && paths.some((p) => under(f.block!.path, p))) f.block = undefined;
      if (f.next && paths.some((p) => under(f.next!.path, p))) f.next = undefined;
    }
    for (const k of attrs.keys()) if (paths.some((p) => under(k, p))) attrs.delete(k);
    for (const k of missing.keys()) if (paths.some((p) => under(k, p))) missing.delete(k);
    for (const k of madeDirs.keys()) if (paths.some((p) => under(k, p))) madeDirs.delete(k);
    for (const k of cached.keys()) if (paths.some((p) => under(k, p))) cached.delete(k);
  }

  /** Waits for the Writes of `path` (and, with `tree`, of every path under it); throws a refusal. */
  async function settle(path: string, tree = false): Promise<void> {
    for (const [p, wb] of [...dirty]) {
      if (p !== path && !(tree && under(p, path))) continue;
      try {
        await wb.flush();
      } finally {
        if (wb.idle() && dirty.get(p) === wb) dirty.delete(p);
      }
    }
  }

  async function fetchBlock(path: string, offset: number, len: number): Promise<Block> {
    const want = Math.max(len, READ_AHEAD);
    if (want === READ_AHEAD) {
      // One FSAL Read: its answer's bytes are the block, of the size read (a small file is a small block). A 2 MiB
      // buffer per block, copied into, made a checkout's reads of small objects mostly garbage to collect.
      const res = await remote.read(path, offset, want);
      return { path, offset, data: Buffer.from(res.data.buffer, res.data.byteOffset, res.data.byteLength), eof: res.eof || res.data.length < want };
    }
    const data = Buffer.allocUnsafe(want);
    const n = await readInto(path, data, data.length, offset);
    return { path, offset, data: data.subarray(0, n), eof: n < data.length };
  }

  /** Serves a kernel read from the open file's blocks, fetching the next block ahead while this one is served. */
  async function readCached(path: string, fd: number, buf: Buffer, len: number, pos: number): Promise<number> {
    let f = files.get(fd);
    if (!f) files.set(fd, (f = {}));
    const covers = (x: Block | undefined): x is Block => !!x && x.path === path && pos >= x.offset && (pos + len <= x.offset + x.data.length || x.eof);
    const lone = len < LONE_READ && pos !== 0 && f.end !== pos;
    f.end = pos + len;
    if (!covers(f.block)) {
      if (lone) {
        // Only these bytes: a 2 MiB block (an FSAL Read 500 times the size, and the next one fetched ahead) made a
        // read of a 64 MiB file the mount had just written, two such pages short of the page cache, take 2-10 times
        // as long.
        const res = await remote.read(path, pos, len);
        const n = Math.min(len, res.data.length);
        Buffer.from(res.data.buffer, res.data.byteOffset, n).copy(buf, 0);
        return n;
      }
      const next = f.next;
      f.next = undefined;
      const b = next && next.path === path && next.offset <= pos ? await next.promise : undefined;
      f.block = covers(b) ? b : await fetchBlock(path, pos, len);
    }
    const b = f.block!;
    if (!b.eof && !f.next && pos + len > b.offset + b.data.length / 2) {
      const at = b.offset + b.data.length;
      const promise = fetchBlock(path, at, READ_AHEAD);
      // A failed read-ahead is dropped here and fetched again (and answered) when the kernel asks for it.
      promise.catch(() => undefined);
      f.next = { path, offset: at, promise };
    }
    const from = pos - b.offset;
    const n = Math.max(0, Math.min(len, b.data.length - from));
    b.data.copy(buf, 0, from, from + n);
    return n;
  }

  /** Runs an async operation and answers the kernel with 0 / its result or a negative errno. */
  function run(op: string, path: string, body: () => Promise<void>, cb: (err: number) => void): void {
    body().then(
      () => cb(0),
      (err: unknown) => {
        log.debug({ op, path, err }, 'operation refused');
        cb(neg(errnoFor(err)));
      },
    );
  }

  async function readInto(path: string, buf: Buffer, len: number, pos: number): Promise<number> {
    let done = 0;
    while (done < len) {
      const res = await remote.read(path, pos + done, Math.min(READ_AHEAD, len - done));
      res.data.copy(buf, done);
      done += res.data.length;
      if (res.eof || res.data.length === 0) break;
    }
    return done;
  }

  async function writeAll(path: string, data: Buffer, pos: number): Promise<void> {
    for (let off = 0; off < data.length; off += CHUNK) {
      await remote.write(path, pos + off, data.subarray(off, Math.min(data.length, off + CHUNK)));
    }
  }

  async function getAttr(path: string): Promise<FileAttributes> {
    await settle(path);
    const now = Date.now();
    const hit = attrs.get(path);
    if (hit && hit.until > now) return hit.a;
    attrs.delete(path);
    const gone = missing.get(path);
    if (gone !== undefined && gone > now) throw Object.assign(new Error('no such file (remembered)'), { code: 'ENOENT' });
    missing.delete(path);
    const dir = await namesOf(parentOf(path), now);
    if (dir && !dir.names.has(nameOf(path))) throw Object.assign(new Error('no such file (a directory whose names are known)'), { code: 'ENOENT' });
    try {
      return await remote.getAttr(path);
    } catch (err) {
      if (errnoFor(err) === 'ENOENT') remember(missing, path, Date.now() + namesTtl);
      throw err;
    }
  }

  /** The names of a directory this mount made, at most namesTtl old (renewed from a listing), or undefined. */
  async function namesOf(dirPath: string, now: number): Promise<MadeDir | undefined> {
    const dir = madeDirs.get(dirPath);
    if (!dir || dir.until > now) return dir;
    dir.relisting ??= relist(dirPath, dir);
    return dir.relisting;
  }

  /**
   * Renews a made directory's names from one ReadDir: what it lists, plus every name the entry holds (a name made
   * through the mount while the listing was taken; one removed elsewhere is only asked of the FSAL again). A listing
   * of more than RELIST_MAX names, or a failed one, drops the entry: lookups go to the FSAL as for any directory.
   */
  async function relist(dirPath: string, dir: MadeDir): Promise<MadeDir | undefined> {
    try {
      const res = await remote.readDir(dirPath, 0, RELIST_MAX + 1);
      if (madeDirs.get(dirPath) !== dir) return undefined;
      if (!res.eof || res.entries.length > RELIST_MAX) {
        madeDirs.delete(dirPath);
        return undefined;
      }
      const fresh: MadeDir = { until: Date.now() + namesTtl, names: new Set([...res.entries.map((e) => e.name), ...dir.names]) };
      remember(madeDirs, dirPath, fresh);
      return fresh;
    } catch {
      if (madeDirs.get(dirPath) === dir) madeDirs.delete(dirPath);
      return undefined;
    }
  }

  async function truncate(path: string, size: number): Promise<void> {
    await settle(path);
    const attrs = await remote.getAttr(path);
    if (attrs.is_dir) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
    if (size === attrs.size) return;
    if (size > attrs.size) {
      // Extend with zeros (a write past the end extends the file; the quota counts the new bytes).
      const zeros = Buffer.alloc(Math.min(CHUNK, size - attrs.size));
      for (let at = attrs.size; at < size; at += zeros.length) {
        await remote.write(path, at, zeros.subarray(0, Math.min(zeros.length, size - at)));
      }
      return;
    }
    const keep = Buffer.alloc(size);
    if (size > 0) await readInto(path, keep, size, 0);
    await remote.create(path, attrs.mode, false);
    if (size > 0) await writeAll(path, keep, 0);
  }

  return {
    getattr(path, cb) {
      getAttr(path).then(
        (a) => cb(0, toStats(a)),
        (err: unknown) => cb(neg(errnoFor(err))),
      );
    },

    readdir(path, cb) {
      (async () => {
        await settle(path, true);
        const names: string[] = [];
        const stats: FuseStats[] = [];
        for (let offset = 0; ; ) {
          const res = await remote.readDir(path, offset, 1000);
          for (const e of res.entries) {
            names.push(e.name);
            stats.push(toStats(e.attributes ?? { size: 0, mode: 0o644, mtime_unix_ms: 0, is_dir: false, uid: 0, gid: 0 }));
          }
          offset += res.entries.length;
          if (res.eof || res.entries.length === 0) break;
        }
        return { names, stats };
      })().then(
        ({ names, stats }) => cb(0, names, stats),
        (err: unknown) => cb(neg(errnoFor(err))),
      );
    },

    open(path, flags, cb) {
      // O_WRONLY or O_RDWR on a read-only mount: refused now, not at the close after the write-behind took the data.
      if (options.readOnly && (flags & ACCESS_MODE) !== fsConstants.O_RDONLY) {
        cb(neg('EROFS'));
        return;
      }
      // The kernel looked the path up already; access is judged per Read/Write, where the FSAL sees the operation.
      // One GetAttr (the path's Writes settled first) decides whether the kernel keeps the file's pages: kept when the
      // FSAL shows the size and mtime the pages are of (`cached`), dropped otherwise — close-to-open, as NFS gives.
      // The answer is remembered as the path's attributes: libfuse 2.9's auto_cache asks for them right after the
      // open and so gets the FSAL's answer of this moment, not one the daemon kept from its own Create or Writes.
      // The open itself never fails on this check (it did not under libfuse 2.9): without an answer the pages go.
      (async () => {
        // The path's Writes land first (so the GetAttr shows them), without taking a refusal from their writer's close.
        await dirty.get(path)?.drained();
        attrs.delete(path);
        const was = cached.get(path);
        const stale = was !== undefined || refused.has(path);
        cached.delete(path);
        refused.delete(path);
        const a = await remote.getAttr(path).catch(() => undefined);
        if (!a) return false;
        const keep = !!was && was.size === a.size && was.mtime === a.mtime_unix_ms;
        if (stale && !keep && options.invalidate) await options.invalidate(path).catch(() => 0);
        pagesOf(path, a);
        remember(attrs, path, { a, until: Date.now() + ATTR_TTL_MS });
        return keep;
      })().then(
        (keep) => cb(0, nextFd++, keep),
        (err: unknown) => cb(neg(errnoFor(err))),
      );
    },

    create(path, mode, cb) {
      // The kernel calls create only for a name its lookup did not find, so an existing file is a race: refuse it.
      forget(path);
      changing([path], () => remote.create(path, mode & 0o7777, true), () => named(path, true)).then(
        (res) => {
          // The kernel asks for the new file's attributes next: answer them from the Create. A new file has no pages
          // to keep but those this open writes.
          if (res.attributes) {
            remember(attrs, path, { a: res.attributes, until: Date.now() + ATTR_TTL_MS });
            pagesOf(path, res.attributes);
          }
          cb(0, nextFd++, true);
        },
        (err: unknown) => cb(neg(errnoFor(err))),
      );
    },

    read(path, fd, buf, len, pos, cb) {
      options.observe?.('read', len);
      settle(path)
        .then(() => readCached(path, fd, buf, len, pos))
        .then(
          (n) => cb(n),
          (err: unknown) => cb(neg(errnoFor(err))),
        );
    },

    write(path, _fd, buf, len, pos, cb) {
      options.observe?.('write', len);
      forget(path);
      let wb = dirty.get(path);
      // Each Write's answer is the file as the mount left it: its attributes, and what its pages are of (the kernel
      // keeps the pages it wrote).
      const written = (a: FileAttributes): void => {
        remember(attrs, path, { a, until: Date.now() + ATTR_TTL_MS });
        pagesOf(path, a);
      };
      const failed = (): void => {
        refused.add(path);
        cached.delete(path);
      };
      if (!wb) dirty.set(path, (wb = new WriteBehind(remote, path, written, failed)));
      // Copied into the path's buffer before the callback: the binding reuses `buf` once it has answered.
      wb.write(buf, len, pos).then(
        () => cb(len),
        (err: unknown) => cb(neg(errnoFor(err))),
      );
    },

    // Forgotten again once done: the Writes it waited for left their attributes, from before the new size.
    truncate(path, size, cb) {
      forget(path);
      run('truncate', path, () => truncate(path, size).finally(() => forget(path)), cb);
    },

    ftruncate(path, _fd, size, cb) {
      forget(path);
      run('ftruncate', path, () => truncate(path, size).finally(() => forget(path)), cb);
    },

    // close() and fsync() wait for the path's buffered Writes and answer their refusal (ENOSPC, EROFS, ...).
    flush(path, _fd, cb) {
      run('flush', path, () => settle(path), cb);
    },
    fsync(path, _dataSync, _fd, cb) {
      run('fsync', path, () => settle(path), cb);
    },
    release(path, fd, cb) {
      files.delete(fd);
      // flush (at close) answered any refusal already; the kernel ignores release's answer.
      settle(path).then(
        () => cb(0),
        () => cb(0),
      );
    },

    unlink(path, cb) {
      run(
        'unlink',
        path,
        async () => {
          await settle(path).catch(() => undefined);
          forget(path);
          await changing([path], () => remote.remove(path), () => named(path, false));
        },
        cb,
      );
    },

    rename(src, dest, cb) {
      run(
        'rename',
        src,
        async () => {
          await settle(src, true);
          await settle(dest, true);
          forget(src, dest);
          await changing([src, dest], () => remote.rename(src, dest), () => {
            named(src, false);
            named(dest, true);
          });
        },
        cb,
      );
    },

    mkdir(path, mode, cb) {
      forget(path);
      run(
        'mkdir',
        path,
        async () => {
          const res = await changing([path], () => remote.mkDir(path, mode & 0o7777), () => {
            named(path, true);
            remember(madeDirs, path, { until: Date.now() + namesTtl, names: new Set<string>() });
          });
          // The kernel looks the new directory up next: answer it from the MkDir, as create does.
          if (res.attributes) remember(attrs, path, { a: res.attributes, until: Date.now() + ATTR_TTL_MS });
        },
        cb,
      );
    },

    // The FSAL has no SetAttr, so a mode cannot change; but tools set the mode a file already has (git sets its
    // config.lock to the config's 0644, tar extractors a file's own mode) and fail on ENOSYS. A chmod to the
    // permission bits the file has succeeds and changes nothing; any other is refused (EPERM).
    chmod(path, mode, cb) {
      run(
        'chmod',
        path,
        async () => {
          const a = await getAttr(path);
          if ((a.mode & 0o7777) !== (mode & 0o7777)) throw Object.assign(new Error('modes cannot be changed'), { code: 'EPERM' });
        },
        cb,
      );
    },

    chown(path, uid, gid, cb) {
      run(
        'chown',
        path,
        async () => {
          const a = await getAttr(path);
          // -1 (0xffffffff) leaves that id as it is.
          const keeps = (want: number, has: number): boolean => want === 0xffffffff || want === -1 || want === has;
          if (!keeps(uid, a.uid) || !keeps(gid, a.gid)) throw Object.assign(new Error('owners are squashed'), { code: 'EPERM' });
        },
        cb,
      );
    },

    // A Write of no bytes: checked by the FSAL as a write and recorded; the file is marked modified now.
    utimens(path, _atime, _mtime, cb) {
      run(
        'utimens',
        path,
        async () => {
          await settle(path);
          forget(path);
          try {
            await remote.write(path, 0, EMPTY);
          } catch (err) {
            // A directory passed every check (a read-only mount or the policy refuses before this); its time stays.
            if (errnoFor(err) !== 'EISDIR') throw err;
          }
        },
        cb,
      );
    },

    // One FSAL StatFs (no query while the FSAL's access cache is warm); a node without it answers zeros, as before.
    statfs(_path, cb) {
      remote.statFs().then(
        (fs) => cb(0, fs ? statfsOf(fs.size_limit_bytes, fs.used_bytes) : statfsOf(0, 0)),
        (err: unknown) => cb(neg(errnoFor(err))),
      );
    },

    rmdir(path, cb) {
      forget(path);
      run('rmdir', path, () => changing([path], () => remote.rmDir(path), () => named(path, false)), cb);
    },
  };
}
