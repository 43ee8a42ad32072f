// The kernel's page cache serves reads of a file that has not changed (auto_cache, src/fuse/binding.ts): reading the
// same file again through the mount asks the FSAL for no data, as a disk's page cache would. A change made by another
// path (the VolumeService, as a tool writes) is seen at the next open once the attributes' second has passed: the
// open compares the file's size and mtime with the cached ones and drops the pages when either moved.
import test from 'ava';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MountManager } from '../../src/fuse/mounts.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { fsalFixture, TENANT } from '../fsal/support.ts';

/** A shell command in a child process: the FUSE callbacks run on this process's event loop, which must stay free. */
function sh(script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile('sh', ['-c', script], { timeout: 120_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr })),
  );
}

test('a file read again through the mount comes from the page cache; a change made elsewhere shows at the next open', async (t) => {
  const f = await fsalFixture();
  const prefix = await mkdtemp(path.join(os.tmpdir(), 'orch-fuse-cache-'));
  const token = await f.idp.sign({ sub: 'svc-fuse', preferred_username: 'service-account-fuse-daemon' });
  const mounts = new MountManager({ mountPrefix: prefix, fsal: { address: f.address, token }, logger: silentLogger() });
  t.teardown(async () => {
    await mounts.closeAll();
    await f.close();
    await rm(prefix, { recursive: true, force: true });
  });
  const exec = await f.execution();
  const vol = await f.volume({ limit: 64 * 1024 * 1024 });
  await f.grant(exec, vol);
  const mnt = await mounts.mount({ execution_id: exec, volume_id: vol, tenant_id: TENANT });
  const reads = async (): Promise<number> => {
    await f.fsal.flushEvents();
    const r = await f.db.query<{ n: string }>("SELECT count(*) AS n FROM storage_events WHERE volume_id = $1 AND operation = 'read' AND path = '/data.bin'", [vol]);
    return Number(r.rows[0]!.n);
  };

  const made = await sh(`head -c 4194304 /dev/urandom > ${mnt}/data.bin && sha256sum ${mnt}/data.bin`);
  t.is(made.code, 0, made.stderr);
  const sum = made.stdout.split(' ')[0];
  const first = await sh(`sha256sum ${mnt}/data.bin`);
  t.is(first.stdout.split(' ')[0], sum);
  const afterFirst = await reads();
  for (let i = 0; i < 3; i++) t.is((await sh(`sha256sum ${mnt}/data.bin`)).stdout.split(' ')[0], sum);
  const afterRepeats = await reads();
  t.log(`FSAL Reads: ${afterFirst} for the first two reads, ${afterRepeats - afterFirst} for three more`);
  t.is(afterRepeats, afterFirst, 'three more reads of an unchanged file asked the FSAL for no data');

  // Same size, new bytes, written past the mount: the next open sees it, every page of it.
  await f.volumes.writeFile(TENANT, vol, '/data.bin', Buffer.alloc(4 * 1024 * 1024, 0x61));
  t.is((await sh(`head -c 4 ${mnt}/data.bin`)).stdout, 'aaaa', 'the change made through the VolumeService shows at the next open');
  t.is((await sh(`tail -c 4 ${mnt}/data.bin`)).stdout, 'aaaa', 'no page of the old content is left');
});
