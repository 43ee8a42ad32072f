// Shared by the FUSE tests: a shell command in a child process (the FUSE callbacks run on the test's own event loop,
// which must stay free, so never a sync exec), and a volume mounted for an execution through a MountManager of this
// process, with the StorageEvents of a path to count the FSAL calls a kernel operation made.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import { MountManager } from '../../src/fuse/mounts.ts';
import type { AccessMode } from '../../src/fsal/grants.ts';
import type { FsalOperationsOptions } from '../../src/fuse/operations.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { fsalFixture, TENANT, type FsalFixture } from '../fsal/support.ts';

export interface ShResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function sh(script: string): Promise<ShResult> {
  return new Promise((resolve) =>
    execFile('sh', ['-c', script], { timeout: 120_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

export interface MountedVolume {
  f: FsalFixture;
  vol: string;
  exec: string;
  mnt: string;
  /** The FSAL calls made on `path` (volume path, leading /), as "<operation> <status>", oldest first. */
  calls(path: string): Promise<string[]>;
}

/** An execution's volume of `limit` bytes, granted `mode` (read-write by default), mounted through the FUSE binding; everything is undone at teardown. */
export async function mountedVolume(t: ExecutionContext, o: { limit?: number; mode?: AccessMode; operations?: FsalOperationsOptions; writeStream?: boolean } = {}): Promise<MountedVolume> {
  const f = await fsalFixture(o.writeStream === undefined ? {} : { writeStream: o.writeStream });
  const prefix = await mkdtemp(path.join(os.tmpdir(), 'orch-fuse-'));
  const token = await f.idp.sign({ sub: 'svc-fuse', preferred_username: 'service-account-fuse-daemon' });
  const mounts = new MountManager({
    mountPrefix: prefix,
    fsal: { address: f.address, token },
    logger: silentLogger(),
    ...(o.operations === undefined ? {} : { operations: o.operations }),
  });
  t.teardown(async () => {
    await mounts.closeAll();
    await f.close();
    await rm(prefix, { recursive: true, force: true });
  });
  const exec = await f.execution();
  const vol = await f.volume(o.limit === undefined ? {} : { limit: o.limit });
  await f.grant(exec, vol, o.mode ?? 'read-write');
  const mnt = await mounts.mount({ execution_id: exec, volume_id: vol, tenant_id: TENANT });
  return {
    f,
    vol,
    exec,
    mnt,
    async calls(p) {
      await f.fsal.flushEvents();
      const r = await f.db.query<{ op: string }>("SELECT operation || ' ' || status AS op FROM storage_events WHERE volume_id = $1 AND path = $2 ORDER BY seq", [vol, p]);
      return r.rows.map((x) => x.op);
    },
  };
}
