// The FUSE daemon's mounts (seed 000 mount lifecycle): Mount makes `<mount_prefix>/<volume_id>` a kernel FUSE mount
// whose every operation is an FsalService call for (execution, volume, tenant); Unmount detaches it and removes the
// mountpoint. One mount per volume per daemon (the path is the volume id); mounting it again for the same execution
// answers the same path, for another execution ALREADY_EXISTS.
import { execFile } from 'node:child_process';
import { mkdir, rmdir, stat, writeFile } from 'node:fs/promises';
import { status } from '@grpc/grpc-js';
import path from 'node:path';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import { fuseBinding, fuseBindingName, type FuseInstance } from './binding.ts';
import { FsalRemote, type FsalConnection, type FsalTarget } from './fsal-client.ts';
import { fsalOperations, type FsalOperationsOptions } from './operations.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TENANT = /^[a-z0-9][a-z0-9-]{0,62}$/;

export interface MountManagerOptions {
  /** Parent directory of the mountpoints. */
  mountPrefix: string;
  fsal: FsalConnection;
  logger: Logger;
  /** The daemon's caches per mount (FsalOperationsOptions; tests). */
  operations?: FsalOperationsOptions;
}

interface Mounted {
  target: FsalTarget;
  mountPath: string;
  fuse: FuseInstance;
  remote: FsalRemote;
}

/** Maps a FsalCallError from the preflight check to the same status for the Mount caller. */
function preflightError(err: unknown, target: FsalTarget): OrchError {
  const e = err as { code?: status; details?: string };
  const byCode: Partial<Record<status, OrchError['spec']>> = {
    [status.NOT_FOUND]: Errors.NOT_FOUND,
    [status.PERMISSION_DENIED]: Errors.FORBIDDEN,
    [status.UNAUTHENTICATED]: Errors.UNAUTHENTICATED,
    [status.INVALID_ARGUMENT]: Errors.BAD_REQUEST,
    [status.UNAVAILABLE]: Errors.UNAVAILABLE,
  };
  const spec = (e.code !== undefined ? byCode[e.code] : undefined) ?? Errors.UNAVAILABLE;
  return new OrchError(spec, `cannot mount volume ${target.volume_id} for execution ${target.execution_id}: ${e.details ?? String(err)}`, { cause: err });
}

function promisify(fn: (cb: (err: Error | null) => void) => void): Promise<void> {
  return new Promise((resolve, reject) => fn((err) => (err ? reject(err) : resolve())));
}

export class MountManager {
  private readonly mounts = new Map<string, Mounted>();
  /** Mount/unmount of one volume at a time. */
  private readonly busy = new Map<string, Promise<unknown>>();
  private readonly log: Logger;

  constructor(private readonly opts: MountManagerOptions) {
    this.log = opts.logger.child({ component: 'fuse-mounts' });
  }

  private serial<T>(volumeId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.busy.get(volumeId) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(fn);
    this.busy.set(volumeId, next);
    return next.finally(() => {
      if (this.busy.get(volumeId) === next) this.busy.delete(volumeId);
    });
  }

  list(): { execution_id: string; volume_id: string; tenant_id: string; mount_path: string }[] {
    return [...this.mounts.values()].map((m) => ({ ...m.target, mount_path: m.mountPath }));
  }

  mount(target: FsalTarget): Promise<string> {
    if (!UUID.test(target.execution_id)) throw new OrchError(Errors.BAD_REQUEST, 'execution_id must be a UUID');
    if (!UUID.test(target.volume_id)) throw new OrchError(Errors.BAD_REQUEST, 'volume_id must be a UUID');
    if (!TENANT.test(target.tenant_id)) throw new OrchError(Errors.BAD_REQUEST, 'tenant_id must be a tenant slug');
    const Fuse = fuseBinding();
    const binding = fuseBindingName();
    return this.serial(target.volume_id, async () => {
      const existing = this.mounts.get(target.volume_id);
      if (existing) {
        if (existing.target.execution_id === target.execution_id) return existing.mountPath;
        throw new OrchError(Errors.CONFLICT, `volume ${target.volume_id} is mounted for execution ${existing.target.execution_id}`);
      }
      const remote = new FsalRemote(this.opts.fsal, target);
      // Ask the FSAL first, so a refusal (not this tenant's execution, no grant, ended) fails the Mount itself; and
      // whether the access is read-only, so the kernel mount is `ro` (EROFS at open, as any read-only filesystem:
      // write-behind would otherwise take `echo y >> ro/file`'s write and only its close, whose error shells ignore,
      // would hear the refusal).
      let readOnly = false;
      try {
        const [, fs] = await Promise.all([remote.getAttr('/'), remote.statFs()]);
        readOnly = fs?.read_only ?? false;
      } catch (err) {
        remote.close();
        throw preflightError(err, target);
      }
      const mountPath = path.join(this.opts.mountPrefix, target.volume_id);
      await this.prepareMountpoint(mountPath);
      // The operations invalidate kernel caches through the mount they serve, which exists only once they do.
      let fuse: FuseInstance | undefined;
      const ops = fsalOperations(remote, this.log, { ...this.opts.operations, readOnly, invalidate: (p) => fuse?.invalidate?.(p) ?? Promise.resolve(0) });
      fuse = new Fuse(mountPath, ops, {
        force: true,
        allowOther: true,
        readOnly,
        fsname: `orch-fsal:${target.volume_id}`,
        subtype: 'orch',
        attrTimeout: 1,
        entryTimeout: 1,
        negativeTimeout: 1,
        // The kernel was answered EIO; the callback's error is the daemon's bug, not the caller's.
        onError: (err, op) => this.log.error({ err, op, volume_id: target.volume_id }, 'a FUSE callback threw'),
        // libfuse 3: the kernel let go of the mount (after Unmount, once nothing in it was in use).
        onExit: () => this.log.debug({ volume_id: target.volume_id, mountPath }, 'the FUSE loop ended'),
      });
      try {
        await promisify((cb) => fuse.mount(cb));
      } catch (err) {
        remote.close();
        await rmdir(mountPath).catch(() => undefined);
        throw new OrchError(Errors.UNAVAILABLE, `mounting ${mountPath} failed: ${(err as Error).message}`, { cause: err });
      }
      this.mounts.set(target.volume_id, { target, mountPath, fuse, remote });
      if (binding.name === 'libfuse3') await this.widenReadahead(mountPath);
      // Which binding serves it (libfuse3, or the fuse-native fallback and why): the speed differs, the checks do not.
      this.log.info({ ...target, mountPath, read_only: readOnly, binding: binding.name, ...(binding.why ? { binding_fallback: binding.why } : {}) }, 'volume mounted');
      return mountPath;
    });
  }

  /**
   * Makes the mountpoint. A daemon that died (killed -9) leaves its mounts behind with no one serving them: every
   * access answers ENOTCONN, so mkdir fails and the volume could never be mounted again. Such a dead mount is
   * detached first (`fusermount -uz`); it is ours, since the path is this daemon's prefix and the volume's id.
   */
  private async prepareMountpoint(mountPath: string): Promise<void> {
    try {
      await mkdir(mountPath, { recursive: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOTCONN') throw err;
      this.log.warn({ mountPath }, 'detaching a dead mount left by an earlier daemon');
      await new Promise<void>((resolve, reject) =>
        execFile('fusermount', ['-uz', mountPath], (e, _o, stderr) => (e ? reject(new OrchError(Errors.UNAVAILABLE, `detaching the dead mount ${mountPath} failed: ${stderr || e.message}`)) : resolve())),
      );
      await mkdir(mountPath, { recursive: true });
    }
  }

  /**
   * The kernel reads a file ahead in windows of its bdi's read_ahead_kb (128 KiB by default), so reads of a file not
   * in the page cache came as 128 KiB requests even where the mount takes 1 MiB ones: the mount's bdi (`<major>:
   * <minor>` of its device) gets 1 MiB, one request per MiB read. Needs root (sysfs); otherwise left as it is.
   */
  private async widenReadahead(mountPath: string): Promise<void> {
    try {
      const dev = (await stat(mountPath)).dev;
      const major = Math.floor(dev / 256) & 0xfff;
      const minor = (dev & 0xff) | (Math.floor(dev / 4096) & 0xfff00);
      await writeFile(`/sys/class/bdi/${major}:${minor}/read_ahead_kb`, '1024');
    } catch (err) {
      this.log.debug({ err, mountPath }, 'the mount reads ahead the kernel default');
    }
  }

  unmount(executionId: string, volumeId: string): Promise<void> {
    return this.serial(volumeId, async () => {
      const m = this.mounts.get(volumeId);
      if (!m) throw new OrchError(Errors.NOT_FOUND, `volume ${volumeId} is not mounted`);
      if (m.target.execution_id !== executionId) {
        throw new OrchError(Errors.FORBIDDEN, `volume ${volumeId} is mounted for execution ${m.target.execution_id}, not ${executionId}`);
      }
      await this.detach(m);
    });
  }

  private async detach(m: Mounted): Promise<void> {
    await promisify((cb) => m.fuse.unmount(cb));
    this.mounts.delete(m.target.volume_id);
    m.remote.close();
    await rmdir(m.mountPath).catch((err: unknown) => this.log.warn({ err, mountPath: m.mountPath }, 'removing the mountpoint failed'));
    this.log.info({ ...m.target, mountPath: m.mountPath }, 'volume unmounted');
  }

  /** Unmounts everything (daemon shutdown). */
  async closeAll(): Promise<void> {
    for (const m of [...this.mounts.values()]) {
      await this.serial(m.target.volume_id, () => this.detach(m)).catch((err: unknown) => this.log.error({ err, mountPath: m.mountPath }, 'unmount at shutdown failed'));
    }
  }
}
