// `orch fuse-daemon` as a user runs it (the real bin, a child process): it prints where it listens, mounts a volume
// over the test's FsalService when asked through FuseMountService, and on SIGTERM unmounts everything and exits 0.
import test from 'ava';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { credentials, status } from '@grpc/grpc-js';
import { FuseMountServiceClient, FuseMountServiceService as M } from '../../src/gen/orch/fuse/v1/fuse.js';
import { call } from '../grpc/helpers.ts';
import { startFuseDaemon } from '../support/podman-node.ts';
import { fsalFixture, TENANT } from '../fsal/support.ts';

async function isMounted(p: string): Promise<boolean> {
  const table = await readFile('/proc/self/mounts', 'utf8');
  return table.split('\n').some((l) => l.split(' ')[1] === p);
}

test('orch fuse-daemon serves Mount/Unmount and unmounts everything on SIGTERM', async (t) => {
  const f = await fsalFixture();
  const prefix = await mkdtemp(path.join(os.tmpdir(), 'orch-fuse-daemon-'));
  t.teardown(async () => {
    await f.close();
    await rm(prefix, { recursive: true, force: true });
  });
  const token = await f.idp.sign({ sub: 'svc-fuse', preferred_username: 'service-account-fuse-daemon' });
  const daemon = await startFuseDaemon(t, { port: 0, fsal: f.address, prefix, token });
  const { child, exited } = daemon;
  t.true(daemon.fuse);
  t.is(daemon.mountPrefix, prefix);

  const client = new FuseMountServiceClient(daemon.address, credentials.createInsecure());
  t.teardown(() => client.close());
  const exec = await f.execution();
  const vol = await f.volume();
  await f.grant(exec, vol);
  const m = await call(client, M.mount, { execution_id: exec, volume_id: vol, tenant_id: TENANT });
  t.is(m.code, status.OK, `${m.details} ${daemon.stderr()}`);
  const mnt = m.messages[0]!.mount_path;
  const out = await new Promise<string>((resolve, reject) =>
    execFile('sh', ['-c', `echo from-daemon > ${mnt}/x.txt && cat ${mnt}/x.txt`], (err, so) => (err ? reject(err) : resolve(so))),
  );
  t.is(out, 'from-daemon\n');
  t.is(String(await f.volumes.readFile(TENANT, vol, '/x.txt')), 'from-daemon\n');
  t.true(await isMounted(mnt));

  child.kill('SIGTERM');
  t.is(await exited, 0, daemon.stderr());
  t.false(await isMounted(mnt), 'the daemon unmounted its volume before exiting');
});
