// The FUSE binding. Preferred: orch's own libfuse 3 binding (native/fuse3, src/fuse/fuse3.ts), built at install
// against Debian's libfuse3-dev: 1 MiB kernel requests and a keep_cache answer per open, so a file the mount just
// wrote reads back from the page cache. Fallback: @cocalc/fuse-native, an optional dependency compiled against
// libfuse 2.9 (128 KiB requests, auto_cache) — slower, with the same FSAL checks, since every operation is an FSAL
// call either way. ORCH_FUSE_BINDING=fuse-native forces the fallback; =libfuse3 refuses it. Loaded lazily so that a
// node without either still starts; the daemon then refuses Mount with FAILED_PRECONDITION naming what is missing.
import { createRequire } from 'node:module';
import { Errors, OrchError } from '../errors/catalog.ts';
import { loadFuse3 } from './fuse3.ts';

// The part of the binding's API orch uses (its own index.d.ts does not resolve as a class under NodeNext).
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

/**
 * libfuse 2.9 (@cocalc/fuse-native) only: mount options the binding has no field for. big_writes and max_write let
 * the kernel send 128 KiB writes instead of 4 KiB ones (libfuse 2 needs big_writes asked for explicitly).
 * negative_timeout=1: the kernel remembers a name the FSAL answered NOT_FOUND for 1 s, as it remembers a found one
 * (entry_timeout=1). Tools probe the same missing names over and over: a `git clone` through the mount made 278
 * GetAttr calls answered NOT_FOUND out of 670 FSAL calls. A name made through the mount replaces the kernel's
 * negative entry at once; one made by another path (a tool through the VolumeService) shows within 1 s, as a change
 * to an existing file's attributes does.
 * auto_cache: the kernel keeps a file's pages between opens while the file is unchanged, so reading a file again
 * (git reading its objects, a build reading its sources, `cat` twice) comes from the page cache as on a disk. With
 * ac_attr_timeout=0 every open asks the FSAL for the file's attributes (one GetAttr instead of the file's data) and
 * drops the pages when its size or mtime moved: a change made by another path (an FSAL client, a tool through the
 * VolumeService) shows at the next open, close-to-open as before and as NFS gives.
 */
const EXTRA_OPTIONS = ['big_writes', 'max_write=131072', 'negative_timeout=1', 'auto_cache', 'ac_attr_timeout=0'];

let loaded: { Fuse: FuseClass; name: FuseBindingName; why?: string } | undefined;
let loadError: Error | undefined;

function loadFuseNative(): FuseClass {
  const Base = createRequire(import.meta.url)('@cocalc/fuse-native') as FuseClass;
  // _fuseOptions builds the single `-o a,b,c` argument; extend it rather than fork the binding.
  class OrchFuse extends Base {
    _fuseOptions(): string {
      const base = (Base.prototype as unknown as { _fuseOptions(this: unknown): string })._fuseOptions.call(this);
      return base ? `${base},${EXTRA_OPTIONS.join(',')}` : `-o${EXTRA_OPTIONS.join(',')}`;
    }
  }
  return OrchFuse as unknown as FuseClass;
}

function load(): { Fuse: FuseClass; name: FuseBindingName; why?: string } {
  if (loaded) return loaded;
  if (loadError) throw loadError;
  const want = process.env.ORCH_FUSE_BINDING;
  let why: string | undefined;
  if (want === 'fuse-native') why = 'ORCH_FUSE_BINDING=fuse-native';
  else {
    try {
      loaded = { Fuse: loadFuse3().Fuse, name: 'libfuse3' };
      return loaded;
    } catch (err) {
      why = (err as Error).message.split('\n')[0];
      if (want === 'libfuse3') {
        loadError = new OrchError({ ...Errors.CONFIG_INVALID, code: 'fuse_unavailable' }, `the libfuse 3 binding could not be loaded (${why}) and ORCH_FUSE_BINDING=libfuse3`, { cause: err });
        throw loadError;
      }
    }
  }
  try {
    loaded = { Fuse: loadFuseNative(), name: 'fuse-native', why };
    return loaded;
  } catch (err) {
    loadError = new OrchError(
      { ...Errors.CONFIG_INVALID, code: 'fuse_unavailable' },
      `no FUSE binding could be loaded: libfuse 3 (${why}), @cocalc/fuse-native (${(err as Error).message.split('\n')[0]}); run scripts/setup-fuse.sh, then npm install`,
      { cause: err },
    );
    throw loadError;
  }
}

/** The binding's Fuse class; throws FAILED_PRECONDITION (code fuse_unavailable) when it is not installed or built. */
export function fuseBinding(): FuseClass {
  return load().Fuse;
}

/**
 * Which binding serves the mounts and, for the fallback, why libfuse 3 is not used; throws as fuseBinding() does.
 * Logged at each mount (src/fuse/mounts.ts) and printed in `orch fuse-daemon`'s banner.
 */
export function fuseBindingName(): { name: FuseBindingName; why?: string } {
  const l = load();
  return l.why === undefined ? { name: l.name } : { name: l.name, why: l.why };
}

export function fuseAvailable(): boolean {
  try {
    load();
    return true;
  } catch {
    return false;
  }
}
