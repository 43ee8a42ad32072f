// The JavaScript face of a FUSE binding, shared by both (src/fuse/binding.ts picks one): orch's libfuse 3 addon
// (src/fuse/fuse3.ts) and @cocalc/fuse-native. src/fuse/operations.ts implements FuseOperations.

// The part of @cocalc/fuse-native's API orch uses (its own index.d.ts does not resolve as a class under NodeNext), which
// the libfuse 3 binding implements too.
export interface FuseStats {
  mode: number;
  uid: number;
  gid: number;
  size: number;
  dev: number;
  nlink: number;
  ino: number;
  rdev: number;
  blksize: number;
  blocks: number;
  atime: Date;
  mtime: Date;
  ctime: Date;
}

/** statfs's answer: sizes in fragments of `frsize` bytes (df multiplies by it). */
export interface FuseStatfs {
  bsize: number;
  frsize: number;
  blocks: number;
  bfree: number;
  bavail: number;
  files: number;
  ffree: number;
  favail: number;
  fsid: number;
  flag: number;
  namemax: number;
}

type Cb = (err: number) => void;

/**
 * Callbacks take 0 or a negative errno; read and write take the byte count (or a negative errno) alone. open and
 * create may answer keepCache (libfuse 3 only): true keeps the kernel's cached pages of the file, false drops them.
 */
export interface FuseOperations {
  init?: (cb: Cb) => void;
  getattr?: (path: string, cb: (err: number, stat?: FuseStats) => void) => void;
  fgetattr?: (path: string, fd: number, cb: (err: number, stat?: FuseStats) => void) => void;
  readdir?: (path: string, cb: (err: number, names?: string[], stats?: FuseStats[]) => void) => void;
  open?: (path: string, flags: number, cb: (err: number, fd?: number, keepCache?: boolean) => void) => void;
  create?: (path: string, mode: number, cb: (err: number, fd?: number, keepCache?: boolean) => void) => void;
  read?: (path: string, fd: number, buf: Buffer, len: number, pos: number, cb: (bytes: number) => void) => void;
  write?: (path: string, fd: number, buf: Buffer, len: number, pos: number, cb: (bytes: number) => void) => void;
  truncate?: (path: string, size: number, cb: Cb) => void;
  ftruncate?: (path: string, fd: number, size: number, cb: Cb) => void;
  flush?: (path: string, fd: number, cb: Cb) => void;
  fsync?: (path: string, dataSync: boolean, fd: number, cb: Cb) => void;
  release?: (path: string, fd: number, cb: Cb) => void;
  unlink?: (path: string, cb: Cb) => void;
  rename?: (src: string, dest: string, cb: Cb) => void;
  mkdir?: (path: string, mode: number, cb: Cb) => void;
  rmdir?: (path: string, cb: Cb) => void;
  chmod?: (path: string, mode: number, cb: Cb) => void;
  chown?: (path: string, uid: number, gid: number, cb: Cb) => void;
  /**
   * Times in milliseconds since the epoch; libfuse 2.9 passes UTIME_NOW/UTIME_OMIT as 1,073 ms (tv_sec 0), libfuse 3
   * UTIME_NOW as now and UTIME_OMIT as NaN.
   */
  utimens?: (path: string, atime: number, mtime: number, cb: Cb) => void;
  statfs?: (path: string, cb: (err: number, stats?: FuseStatfs) => void) => void;
}

export interface FuseOptions {
  force?: boolean;
  mkdir?: boolean;
  allowOther?: boolean;
  fsname?: string;
  subtype?: string;
  attrTimeout?: number;
  entryTimeout?: number;
  /** Milliseconds an operation may take before the binding answers the kernel ETIMEDOUT; false for none. */
  timeout?: number | false;
  debug?: boolean;
  /** libfuse 3 only: the kernel's negative_timeout in seconds (1 by default; libfuse 2.9 takes it from EXTRA_OPTIONS). */
  negativeTimeout?: number;
  /**
   * libfuse 3 only: the kernel's writeback cache. Off by default: with it the kernel never takes a cached file's size
   * or mtime from the daemon again (fs/fuse/inode.c, fuse_change_attributes), so a file grown or shrunk by another
   * path (a tool through the VolumeService) would keep its old size in the mount until the kernel forgets the inode.
   */
  writebackCache?: boolean;
  /** Mounts read-only (`ro`): the kernel refuses every change with EROFS at once, opens for writing included. */
  readOnly?: boolean;
  /** libfuse 3 only: the largest kernel write and read request, bytes (1 MiB, the most libfuse takes). */
  maxWrite?: number;
  /** libfuse 3 only: a callback threw (the kernel was answered EIO). */
  onError?: (err: unknown, op: string) => void;
  /** libfuse 3 only: the native loop ended (the kernel let go of the mount). */
  onExit?: () => void;
}

export interface FuseInstance {
  readonly mnt: string;
  mount(cb: (err: Error | null) => void): void;
  unmount(cb: (err: Error | null) => void): void;
  /** libfuse 3 only: drops the kernel's cached entry, attributes and pages of a path. */
  invalidate?(path: string): Promise<number>;
}

/** Which binding serves the mounts: orch's libfuse 3 addon, or the libfuse 2.9 fallback. */
export type FuseBindingName = 'libfuse3' | 'fuse-native';

export type FuseClass = new (mnt: string, ops: FuseOperations, opts?: FuseOptions) => FuseInstance;
