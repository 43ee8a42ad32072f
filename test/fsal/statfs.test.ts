// FsalExtensionService.StatFs (an orch extension beside FsalService): a volume's quota, usage and the caller's access
// mode, for a mount's statfs and its `ro` mount, through the real runtime gRPC server with bearer auth and the FUSE
// daemon's own client (FsalRemote). Authorized as every FSAL call; no StorageEvent (it touches no file).
import test from 'ava';
import { status } from '@grpc/grpc-js';
import { FsalCallError, FsalRemote } from '../../src/fuse/fsal-client.ts';
import { fsalFixture, TENANT } from './support.ts';

test('StatFs answers the quota, the usage and the access mode; refuses an execution without the volume; records no event', async (t) => {
  const f = await fsalFixture();
  t.teardown(() => f.close());
  const token = await f.idp.sign({ sub: 'svc-fuse', preferred_username: 'service-account-fuse-daemon' });
  const remoteOf = (execution_id: string, volume_id: string): FsalRemote => {
    const r = new FsalRemote({ address: f.address, token }, { execution_id, volume_id, tenant_id: TENANT });
    t.teardown(async () => r.close());
    return r;
  };
  const exec = await f.execution();
  const rw = await f.volume({ limit: 5000 });
  await f.grant(exec, rw, 'read-write');
  await f.volumes.writeFile(TENANT, rw, '/a.txt', 'x'.repeat(1234));
  const ro = await f.volume({ limit: 7000 });
  await f.grant(exec, ro, 'read-only');

  t.deepEqual(await remoteOf(exec, rw).statFs(), { size_limit_bytes: 5000, used_bytes: 1234, read_only: false });
  t.deepEqual(await remoteOf(exec, ro).statFs(), { size_limit_bytes: 7000, used_bytes: 0, read_only: true });

  const stranger = await f.execution();
  const denied = await remoteOf(stranger, rw).statFs().catch((err: unknown) => err);
  t.true(denied instanceof FsalCallError);
  t.is((denied as FsalCallError).code, status.PERMISSION_DENIED);

  await f.fsal.flushEvents();
  const ev = await f.db.query('SELECT 1 FROM storage_events WHERE volume_id = ANY($1::uuid[])', [[rw, ro]]);
  t.is(ev.rows.length, 0);
});

test('a node without FsalExtensionService: StatFs is undefined (the mount answers zeros, read-write, as before)', async (t) => {
  const f = await fsalFixture({ writeStream: false });
  t.teardown(() => f.close());
  const token = await f.idp.sign({ sub: 'svc-fuse', preferred_username: 'service-account-fuse-daemon' });
  const exec = await f.execution();
  const vol = await f.volume();
  await f.grant(exec, vol);
  const remote = new FsalRemote({ address: f.address, token }, { execution_id: exec, volume_id: vol, tenant_id: TENANT });
  t.teardown(async () => remote.close());
  t.is(await remote.statFs(), undefined);
});
