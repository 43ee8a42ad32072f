// orch's libfuse 3 binding (native/fuse3/*.c, built at install by scripts/build-fuse3.mjs) behind the same
// FuseInstance interface as @cocalc/fuse-native, so src/fuse/operations.ts serves either. What it adds: kernel
// requests of up to 1 MiB, a keep_cache answer per open (open/create callbacks take a third argument), and
// invalidate(path). Loaded by src/fuse/binding.ts, which falls back to @cocalc/fuse-native when this does not load.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FuseClass, FuseInstance, FuseOperations, FuseOptions } from './fuse-types.ts';

/** What the kernel and libfuse agreed at INIT (0s until the kernel's INIT was answered). */
export interface Fuse3Info {
  maxWrite: number;
  maxReadahead: number;
  writebackCache: boolean;
  autoInvalData: boolean;
}

interface Native {
  libfuseVersion: string;
  mount(mnt: string, opts: object, handlers: FuseOperations, onError: (err: unknown, op: string) => void, onExit: () => void): object;
  /** 0, or the errno of umount2 (EPERM when not root: the caller runs fusermount3). */
  unmount(handle: object): number;
  info(handle: object): Fuse3Info;
  /** undefined: cb is called; a number: the answer at once (the mount is gone), cb is not called. */
  invalidatePath(handle: object, path: string, cb: (result: number) => void): number | undefined;
}

const ADDON = path.join('native', 'fuse3', 'build', 'Release', 'orch_fuse3.node');

/** The built addon: the first ancestor of this file holding it (src/fuse/ from the sources, dist/… from the build). */
export function fuse3AddonPath(): string | undefined {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    const file = path.join(dir, ADDON);
    if (existsSync(file)) return file;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/** The Fuse class over the addon; throws when it is not built or does not load (libfuse3.so missing). */
export function loadFuse3(): { Fuse: FuseClass; libfuseVersion: string } {
  const file = fuse3AddonPath();
  if (!file) throw new Error(`${ADDON} is not built (scripts/build-fuse3.mjs: libfuse3-dev is needed at install)`);
  const native = createRequire(import.meta.url)(file) as Native;

  class Fuse3 implements FuseInstance {
    private handle: object | undefined;

    constructor(
      readonly mnt: string,
      private readonly ops: FuseOperations,
      private readonly opts: FuseOptions = {},
    ) {}

    // `force` and `mkdir` of fuse-native are the caller's business here: src/fuse/mounts.ts makes the mountpoint and
    // detaches a dead mount before mounting.
    mount(cb: (err: Error | null) => void): void {
      const o = this.opts;
      try {
        this.handle = native.mount(
          this.mnt,
          {
            fsname: o.fsname,
            subtype: o.subtype,
            allowOther: o.allowOther ?? false,
            readOnly: o.readOnly ?? false,
            attrTimeout: o.attrTimeout ?? 1,
            entryTimeout: o.entryTimeout ?? 1,
            negativeTimeout: o.negativeTimeout ?? 1,
            writebackCache: o.writebackCache ?? false,
            maxWrite: o.maxWrite ?? 1024 * 1024,
            debug: o.debug ?? false,
          },
          this.ops,
          (err, op) => o.onError?.(err, op),
          () => o.onExit?.(),
        );
      } catch (err) {
        process.nextTick(cb, err as Error);
        return;
      }
      process.nextTick(cb, null);
    }

    /** Detaches the mount at once (lazily, as `fusermount -uz`); the native loop ends when the kernel lets go. */
    unmount(cb: (err: Error | null) => void): void {
      const h = this.handle;
      if (!h) {
        process.nextTick(cb, null);
        return;
      }
      this.handle = undefined;
      const errno = native.unmount(h);
      if (errno === 0) {
        process.nextTick(cb, null);
        return;
      }
      execFile('fusermount3', ['-uz', this.mnt], (err, _o, stderr) => cb(err ? new Error(`fusermount3 -uz ${this.mnt}: ${stderr || err.message}`) : null));
    }

    info(): Fuse3Info | undefined {
      return this.handle ? native.info(this.handle) : undefined;
    }

    /** Drops the kernel's entry, attributes and pages of `p` (0 or a negative errno; ENOENT when it has none). */
    invalidate(p: string): Promise<number> {
      const h = this.handle;
      if (!h) return Promise.resolve(0);
      return new Promise((resolve) => {
        const now = native.invalidatePath(h, p, resolve);
        if (now !== undefined) resolve(now);
      });
    }
  }

  return { Fuse: Fuse3, libfuseVersion: native.libfuseVersion };
}
