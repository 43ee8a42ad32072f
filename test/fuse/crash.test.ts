// Crash consistency of the mount path. (1) The FUSE daemon (`orch fuse-daemon`, a real child process) is killed -9
// while `dd` writes a 48 MiB file through its mount, with Writes buffered behind the kernel's: after a new daemon
// mounts the volume again (over the dead mount), the file holds a prefix of what dd wrote and nothing else, the
// volume's used_bytes is what is on disk, and the mount works. (2) The process serving FSAL dies holding quota it
// reserved ahead: the next start's reconcile() gives it back.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { credentials, status } from '@grpc/grpc-js';
import { FuseMountServiceClient, FuseMountServiceService as M } from '../../src/gen/orch/fuse/v1/fuse.js';
import { FsalServiceService as S } from '../../src/gen/orch/fsal/v1/fsal.js';
import { silentLogger } from '../../src/logging/logger.ts';
import { treeSize } from '../../src/volumes/disk.ts';
import { VolumeService } from '../../src/volumes/service.ts';
import { call } from '../grpc/helpers.ts';
import { startFuseDaemon } from '../support/podman-node.ts';
import { fsalFixture, TENANT } from '../fsal/support.ts';
import { sh } from './support.ts';

test('the FUSE daemon killed -9 mid-write: after a restart the file is a prefix of what was written and the quota is what is on disk', async (t) => {
  const f = await fsalFixture();
  const prefix = await mkdtemp(path.join(os.tmpdir(), 'orch-fuse-crash-'));
  const src = path.join(prefix, '..', `${path.basename(prefix)}-pattern.bin`);
  t.teardown(async () => {
    await sh(`fusermount -uz ${prefix}/* 2>/dev/null`);
    await f.close();
    await rm(prefix, { recursive: true, force: true });
    await rm(src, { force: true });
  });
  const MB = 1024 * 1024;
  const pattern = randomBytes(48 * MB);
  await writeFile(src, pattern);
  const token = await f.idp.sign({ sub: 'svc-fuse', preferred_username: 'service-account-fuse-daemon' });
  const exec = await f.execution();
  const vol = await f.volume({ limit: 256 * MB });
  await f.grant(exec, vol);
  const ids = { execution_id: exec, volume_id: vol };

  const first = await startFuseDaemon(t, { port: 0, fsal: f.address, prefix, token });
  t.true(first.fuse);
  const client = new FuseMountServiceClient(first.address, credentials.createInsecure());
  const m = await call(client, M.mount, { ...ids, tenant_id: TENANT });
  client.close();
  t.is(m.code, status.OK, `${m.details} ${first.stderr()}`);
  const mnt = m.messages[0]!.mount_path;

  // dd writes 1 MiB blocks; once a few MiB reached the volume, the daemon dies without a chance to flush anything.
  const dd = sh(`dd if=${src} of=${mnt}/big.bin bs=1M 2>&1`);
  const deadline = Date.now() + 60_000;
  let seen = 0;
  while (Date.now() < deadline) {
    const a = await f.rpc(S.getAttr, { ...ids, path: 'big.bin' });
    seen = a.code === status.OK ? Number(a.messages[0]!.attributes!.size) : 0;
    if (seen >= 4 * MB) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  t.true(seen >= 4 * MB, `dd reached the volume (${seen} bytes)`);
  first.child.kill('SIGKILL');
  await first.exited;
  const ddOut = await dd;
  t.not(ddOut.code, 0, 'dd saw its mount die');

  // What is on disk: a prefix of the pattern, nothing else; used_bytes (in-process view and, once the FSAL's
  // reservation ahead is given back, the row) equals the bytes on disk.
  const host = await f.volumes.hostPath(TENANT, vol);
  const onDisk = await readFile(path.join(host, 'big.bin'));
  t.true(onDisk.length >= 4 * MB && onDisk.length < pattern.length, `${onDisk.length} bytes on disk`);
  t.true(onDisk.equals(pattern.subarray(0, onDisk.length)), 'the file is a prefix of what dd wrote');
  t.is((await f.volumes.get(TENANT, vol)).used_bytes, (await treeSize(host)).bytes);
  await f.volumes.releaseReservations();
  const row = await f.db.query<{ used_bytes: string }>('SELECT used_bytes FROM volumes WHERE id = $1', [vol]);
  t.is(Number(row.rows[0]!.used_bytes), (await treeSize(host)).bytes);

  // A new daemon mounts the volume again over the dead mount, and the file reads back through it.
  const second = await startFuseDaemon(t, { port: 0, fsal: f.address, prefix, token });
  const client2 = new FuseMountServiceClient(second.address, credentials.createInsecure());
  t.teardown(() => client2.close());
  const again = await call(client2, M.mount, { ...ids, tenant_id: TENANT });
  t.is(again.code, status.OK, `${again.details} ${second.stderr()}`);
  t.is(again.messages[0]!.mount_path, mnt);
  const sum = await sh(`cmp ${mnt}/big.bin ${host}/big.bin && echo same && echo more > ${mnt}/after.txt && cat ${mnt}/after.txt`);
  t.is(sum.stdout, 'same\nmore\n', sum.stderr);
  t.is((await f.volumes.get(TENANT, vol)).used_bytes, (await treeSize(host)).bytes);
  second.child.kill('SIGTERM');
  t.is(await second.exited, 0, second.stderr());
});

test('the process serving FSAL dies holding quota reserved ahead: reconcile() at the next start gives it back', async (t) => {
  const f = await fsalFixture();
  t.teardown(() => f.close());
  const vol = await f.volume({ limit: 64 * 1024 * 1024 });
  // A second service on the same data dir and database stands for the process that dies: it reserves a chunk ahead
  // for a 1 KiB write and never gives the rest back (no release, no idle timer: it is "killed").
  const dying = new VolumeService({ db: f.db, dataDir: f.dataDir, nodeId: 'node-fsal', logger: silentLogger(), quotaChunkBytes: 8 * 1024 * 1024, quotaIdleMs: 3_600_000 });
  await dying.writeAt(TENANT, vol, '/a.bin', 0, Buffer.alloc(1024, 1), { create: true });
  const leaked = await f.db.query<{ used_bytes: string }>('SELECT used_bytes FROM volumes WHERE id = $1', [vol]);
  t.true(Number(leaked.rows[0]!.used_bytes) > 1024, 'the dead process held a reservation ahead');
  // The restarted node: its reaper's first pass reconciles.
  const restarted = new VolumeService({ db: f.db, dataDir: f.dataDir, nodeId: 'node-fsal', logger: silentLogger(), quotaChunkBytes: 8 * 1024 * 1024 });
  const r = await restarted.reconcile();
  t.true(r.corrected >= 1);
  const row = await f.db.query<{ used_bytes: string }>('SELECT used_bytes FROM volumes WHERE id = $1', [vol]);
  t.is(Number(row.rows[0]!.used_bytes), 1024);
  // (The dying service's timer is unref'd and an hour away; drop its pool without touching the row again.)
  (dying as unknown as { pools: Map<string, { timer?: NodeJS.Timeout }> }).pools.forEach((p) => p.timer && clearTimeout(p.timer));
});
