// The kernel's view of one volume: each FUSE operation is one or more FsalService calls, so the FSAL's checks
// (ownership, filesystem policy, access mode, quota, squashing, StorageEvents) apply to everything a process in the
// mount does. Paths from the kernel are absolute in the mount (`/a/b`), which the FSAL takes as volume-relative.
//
// Not provided, so the kernel answers ENOSYS: chmod, chown (owners are squashed by the FSAL), utimens (the FSAL has
// no SetAttr; mtime is the last write's), symlinks, hard links, xattrs, statfs. truncate is made of Create (which
// truncates to zero), Read and Write, because the protocol has no SetAttr either.
import { constants as os } from 'node:os';
import type { FileAttributes } from '../gen/orch/fsal/v1/fsal.js';
import type { Logger } from '../logging/logger.ts';
import type { FuseOperations, FuseStats } from './binding.ts';
import { errnoFor, type FsalRemote } from './fsal-client.ts';

/** Largest Read/Write sent in one FSAL call. */
const CHUNK = 1024 * 1024;
/**
 * Read-ahead per open file: the kernel reads in 128 KiB requests; one FSAL Read of 1 MiB serves eight of them. The
 * block is kept for that open file only and dropped by any change made through this mount to the path, and on
 * release: close-to-open consistency, as NFS gives (the kernel re-reads through the daemon at every open).
 */
const READ_AHEAD = 1024 * 1024;

interface Block {
  path: string;
  offset: number;
  data: Buffer;
  eof: boolean;
}

function neg(errno: string): number {
  return -(os.errno[errno as keyof typeof os.errno] ?? os.errno.EIO);
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

export function fsalOperations(remote: FsalRemote, logger: Logger): FuseOperations {
  const log = logger.child({ component: 'fuse-ops', volume_id: remote.target.volume_id });
  let nextFd = 1;
  const blocks = new Map<number, Block>();

  function forget(...paths: string[]): void {
    for (const [fd, b] of blocks) if (paths.some((p) => b.path === p || b.path.startsWith(`${p}/`))) blocks.delete(fd);
  }

  /** Serves a kernel read from the open file's block, fetching a READ_AHEAD block when it does not cover it. */
  async function readCached(path: string, fd: number, buf: Buffer, len: number, pos: number): Promise<number> {
    let b = blocks.get(fd);
    const covers = (x: Block | undefined): x is Block => !!x && x.path === path && pos >= x.offset && (pos + len <= x.offset + x.data.length || x.eof);
    if (!covers(b)) {
      const data = Buffer.alloc(Math.max(len, READ_AHEAD));
      const n = await readInto(path, data, data.length, pos);
      b = { path, offset: pos, data: data.subarray(0, n), eof: n < data.length };
      blocks.set(fd, b);
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
      const res = await remote.read(path, pos + done, Math.min(CHUNK, len - done));
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

  async function truncate(path: string, size: number): Promise<void> {
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
      remote.getAttr(path).then(
        (a) => cb(0, toStats(a)),
        (err: unknown) => cb(neg(errnoFor(err))),
      );
    },

    readdir(path, cb) {
      (async () => {
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

    open(path, _flags, cb) {
      // The kernel looked the path up already; access is judged per Read/Write, where the FSAL sees the operation.
      cb(0, nextFd++);
    },

    create(path, mode, cb) {
      // The kernel calls create only for a name its lookup did not find, so an existing file is a race: refuse it.
      remote.create(path, mode & 0o7777, true).then(
        () => cb(0, nextFd++),
        (err: unknown) => cb(neg(errnoFor(err))),
      );
    },

    read(path, fd, buf, len, pos, cb) {
      readCached(path, fd, buf, len, pos).then(
        (n) => cb(n),
        (err: unknown) => cb(neg(errnoFor(err))),
      );
    },

    write(path, _fd, buf, len, pos, cb) {
      // Copied: the binding reuses its buffer once the callback ran, and the request is serialized asynchronously.
      forget(path);
      writeAll(path, Buffer.from(buf.subarray(0, len)), pos).then(
        () => cb(len),
        (err: unknown) => cb(neg(errnoFor(err))),
      );
    },

    truncate(path, size, cb) {
      forget(path);
      run('truncate', path, () => truncate(path, size), cb);
    },

    ftruncate(path, _fd, size, cb) {
      forget(path);
      run('ftruncate', path, () => truncate(path, size), cb);
    },

    // Writes are synchronous FSAL calls: nothing is buffered here, so flush and fsync have nothing to do.
    flush(_path, _fd, cb) {
      cb(0);
    },
    fsync(_path, _dataSync, _fd, cb) {
      cb(0);
    },
    release(_path, fd, cb) {
      blocks.delete(fd);
      cb(0);
    },

    unlink(path, cb) {
      forget(path);
      run('unlink', path, () => remote.remove(path), cb);
    },

    rename(src, dest, cb) {
      forget(src, dest);
      run('rename', src, () => remote.rename(src, dest), cb);
    },

    mkdir(path, mode, cb) {
      run('mkdir', path, async () => void (await remote.mkDir(path, mode & 0o7777)), cb);
    },

    rmdir(path, cb) {
      run('rmdir', path, () => remote.rmDir(path), cb);
    },
  };
}
