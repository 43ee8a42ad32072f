// The FUSE binding. Preferred: orch's own libfuse 3 binding (native/fuse3, src/fuse/fuse3.ts), built at install
// against Debian's libfuse3-dev: 1 MiB kernel requests and a keep_cache answer per open, so a file the mount just
// wrote reads back from the page cache. Fallback: @cocalc/fuse-native, an optional dependency compiled against
// libfuse 2.9 (128 KiB requests, auto_cache) — slower, with the same FSAL checks, since every operation is an FSAL
// call either way. ORCH_FUSE_BINDING=fuse-native forces the fallback; =libfuse3 refuses it. Loaded lazily so that a
// node without either still starts; the daemon then refuses Mount with FAILED_PRECONDITION naming what is missing.
import { createRequire } from 'node:module';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { FuseBindingName, FuseClass } from './fuse-types.ts';
import { loadFuse3 } from './fuse3.ts';

export type { FuseBindingName, FuseClass, FuseInstance, FuseOperations, FuseOptions, FuseStatfs, FuseStats } from './fuse-types.ts';

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
      // A read-only mount (FuseOptions.readOnly): `ro`, so the kernel refuses every change with EROFS at once.
      const extra = (this as unknown as { opts?: { readOnly?: boolean } }).opts?.readOnly ? [...EXTRA_OPTIONS, 'ro'] : EXTRA_OPTIONS;
      return base ? `${base},${extra.join(',')}` : `-o${extra.join(',')}`;
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
