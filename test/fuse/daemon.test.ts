// `orch fuse-daemon` as a user runs it (the real bin, a child process): it prints where it listens, mounts a volume
// over the test's FsalService when asked through FuseMountService, and on SIGTERM unmounts everything and exits 0.
import test from 'ava';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { credentials, status } from '@grpc/grpc-js';
import { FuseMountServiceClient, FuseMountServiceService as M } from '../../src/gen/orch/fuse/v1/fuse.js';
import { call } from '../grpc/helpers.ts';
import { ORCH_BIN } from '../support/node-process.ts';
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
  const child = spawn(process.execPath, [ORCH_BIN, '--json', 'fuse-daemon', '--listen', '127.0.0.1:0', '--fsal', f.address, '--mount-prefix', prefix, '--log-level', 'warn'], {
    env: { ...process.env, ORCH_TOKEN: token },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', () => reject(new Error(`fuse-daemon exited: ${stderr}`)));
  });
  const banner = JSON.parse(first) as { fuse_daemon: string; mount_prefix: string; fuse: boolean };
  t.true(banner.fuse);
  t.is(banner.mount_prefix, prefix);

  const client = new FuseMountServiceClient(banner.fuse_daemon, credentials.createInsecure());
  t.teardown(() => client.close());
  const exec = await f.execution();
  const vol = await f.volume();
  await f.grant(exec, vol);
  const m = await call(client, M.mount, { execution_id: exec, volume_id: vol, tenant_id: TENANT });
  t.is(m.code, status.OK, `${m.details} ${stderr}`);
  const mnt = m.messages[0]!.mount_path;
  const out = await new Promise<string>((resolve, reject) =>
    execFile('sh', ['-c', `echo from-daemon > ${mnt}/x.txt && cat ${mnt}/x.txt`], (err, so) => (err ? reject(err) : resolve(so))),
  );
  t.is(out, 'from-daemon\n');
  t.is(String(await f.volumes.readFile(TENANT, vol, '/x.txt')), 'from-daemon\n');
  t.true(await isMounted(mnt));

  child.kill('SIGTERM');
  t.is(await exited, 0, stderr);
  t.false(await isMounted(mnt), 'the daemon unmounted its volume before exiting');
});
