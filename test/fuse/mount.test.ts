// FuseMountService end to end: a real kernel FUSE mount (libfuse 3 through native/fuse3, /dev/fuse) whose
// operations are FsalService gRPC calls to a real runtime server with bearer auth. Ordinary shell tools (sh, echo,
// cat, ls, mkdir, mv, rm, head) run in child processes against the mountpoint; their writes show through FsalService
// and as StorageEvents; Unmount removes the mount. The daemon authenticates as a service account acting for the
// mount's tenant.
import test from 'ava';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, utimes } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { credentials, status } from '@grpc/grpc-js';
import { fuseAvailable } from '../../src/fuse/binding.ts';
import { MountManager } from '../../src/fuse/mounts.ts';
import { createFuseServer } from '../../src/fuse/server.ts';
import { startGrpcServer, type RunningGrpcServer } from '../../src/gateway/grpc/start.ts';
import { FsalServiceService as S } from '../../src/gen/orch/fsal/v1/fsal.js';
import { FuseMountServiceClient, FuseMountServiceService as M } from '../../src/gen/orch/fuse/v1/fuse.js';
import { silentLogger } from '../../src/logging/logger.ts';
import { treeSize } from '../../src/volumes/disk.ts';
import { call } from '../grpc/helpers.ts';
import { fsalFixture, TENANT, SQUASH, type FsalFixture } from '../fsal/support.ts';
import { sh } from './support.ts';

let f: FsalFixture;
let prefix: string;
let mounts: MountManager;
let daemon: RunningGrpcServer;
let client: InstanceType<typeof FuseMountServiceClient>;

/** Runs a shell command without blocking the event loop (the FUSE callbacks run on it). */
async function isMounted(p: string): Promise<boolean> {
  const table = await readFile('/proc/self/mounts', 'utf8');
  return table.split('\n').some((l) => l.split(' ')[1] === p);
}

test.before(async () => {
  f = await fsalFixture();
  prefix = await mkdtemp(path.join(os.tmpdir(), 'orch-fuse-'));
  const token = await f.idp.sign({ sub: 'svc-fuse', preferred_username: 'service-account-fuse-daemon', tenant_id: 'orch-system' });
  mounts = new MountManager({ mountPrefix: prefix, fsal: { address: f.address, token }, logger: silentLogger() });
  daemon = await startGrpcServer(createFuseServer(mounts, silentLogger()), '127.0.0.1', 0);
  client = new FuseMountServiceClient(`127.0.0.1:${daemon.port}`, credentials.createInsecure());
});

test.after.always(async () => {
  await mounts?.closeAll();
  client?.close();
  await daemon?.close();
  await f?.close();
  if (prefix) await rm(prefix, { recursive: true, force: true });
});

test('the FUSE binding is built on this machine (scripts/setup-fuse.sh, then npm install)', (t) => {
  t.true(fuseAvailable());
});

test('mount a volume, use it with shell tools through the kernel, see it via FsalService and StorageEvents, unmount', async (t) => {
  const exec = await f.execution();
  const vol = await f.volume();
  await f.grant(exec, vol, 'read-write', '/workspace');
  const ids = { execution_id: exec, volume_id: vol };

  const mounted = await call(client, M.mount, { ...ids, tenant_id: TENANT });
  t.is(mounted.code, status.OK, mounted.details);
  const mnt = mounted.messages[0]!.mount_path;
  t.is(mnt, path.join(prefix, vol));
  t.true(await isMounted(mnt));
  const again = await call(client, M.mount, { ...ids, tenant_id: TENANT });
  t.is(again.messages[0]?.mount_path, mnt, 'mounting again for the same execution answers the same path');

  const w = await sh(`set -e; cd ${mnt}; echo "hello through fuse" > a.txt; mkdir -p src/deep; printf 'x%.0s' $(seq 1 300000) > src/deep/big.txt; echo more >> a.txt`);
  t.is(w.code, 0, w.stderr);
  const r = await sh(`set -e; cd ${mnt}; cat a.txt; ls; wc -c < src/deep/big.txt; stat -c '%u:%g' a.txt`);
  t.is(r.code, 0, r.stderr);
  t.is(r.stdout, `hello through fuse\nmore\na.txt\nsrc\n300000\n${SQUASH.uid}:${SQUASH.gid}\n`);

  // The same bytes through FsalService and on the volume's disk.
  const viaFsal = await f.rpc(S.read, { ...ids, path: 'a.txt', offset: 0, length: 1000 });
  t.is(viaFsal.code, status.OK, viaFsal.details);
  t.is(Buffer.from(viaFsal.messages[0]!.data).toString(), 'hello through fuse\nmore\n');
  t.is((await f.volumes.quota(TENANT, vol)).used_bytes, 24 + 300000);

  // A 3 MiB file written through the VolumeService reads back byte for byte through the mount (read-ahead blocks),
  // and a change made through FsalService shows at the next open.
  const random = randomBytes(3 * 1024 * 1024 + 123);
  await f.volumes.writeFile(TENANT, vol, '/rand.bin', random);
  const sum = await sh(`sha256sum < ${mnt}/rand.bin`);
  t.is(sum.stdout.split(' ')[0], createHash('sha256').update(random).digest('hex'));
  await f.rpc(S.write, { ...ids, path: 'rand.bin', offset: 1024 * 1024 + 5, data: Buffer.from('CHANGED') });
  const slice = await sh(`dd if=${mnt}/rand.bin bs=1 skip=${1024 * 1024 + 5} count=7 2>/dev/null`);
  t.is(slice.stdout, 'CHANGED');
  t.is((await sh(`rm ${mnt}/rand.bin`)).code, 0);

  const mv = await sh(`set -e; cd ${mnt}; mv a.txt b.txt; rm src/deep/big.txt; rmdir src/deep; ls -R`);
  t.is(mv.code, 0, mv.stderr);
  t.regex(mv.stdout, /b\.txt/);
  t.notRegex(mv.stdout, /a\.txt|big\.txt|deep/);
  const gone = await f.rpc(S.getAttr, { ...ids, path: 'a.txt' });
  t.is(gone.code, status.NOT_FOUND);
  t.is((await f.volumes.quota(TENANT, vol)).used_bytes, 24);

  // Every kernel operation became FSAL calls, each with its StorageEvent.
  await f.fsal.flushEvents();
  const ev = await f.db.query<{ operation: string; n: string }>(
    `SELECT operation, COUNT(*) AS n FROM storage_events WHERE volume_id = $1 AND execution_id = $2 AND status = 'OK' GROUP BY operation`,
    [vol, exec],
  );
  const ops = Object.fromEntries(ev.rows.map((r) => [r.operation, Number(r.n)]));
  for (const op of ['create', 'write', 'read', 'getattr', 'readdir', 'mkdir', 'rename', 'remove', 'rmdir']) t.true((ops[op] ?? 0) > 0, `a ${op} event`);
  const written = await f.db.query<{ total: string }>(`SELECT SUM(bytes) AS total FROM storage_events WHERE volume_id = $1 AND operation = 'write' AND status = 'OK'`, [vol]);
  t.is(Number(written.rows[0]!.total), 24 + 300000 + 7, 'the write events add up to the bytes written (the shell and the one FSAL write)');

  const un = await call(client, M.unmount, ids);
  t.is(un.code, status.OK, un.details);
  t.false(await isMounted(mnt));
  await t.throwsAsync(stat(mnt), { code: 'ENOENT' }, 'the mountpoint is removed');
  const twice = await call(client, M.unmount, ids);
  t.is(twice.code, status.NOT_FOUND);
});

test('through the mount: a read-only grant refuses writes, the quota answers ENOSPC, and nothing partial is left', async (t) => {
  const exec = await f.execution();
  const ro = await f.volume();
  await f.volumes.writeFile(TENANT, ro, '/seed.txt', 'seed\n');
  await f.grant(exec, ro, 'read-only');
  const small = await f.volume({ limit: 1000 });
  await f.grant(exec, small, 'read-write');

  const m1 = await call(client, M.mount, { execution_id: exec, volume_id: ro, tenant_id: TENANT });
  t.is(m1.code, status.OK, m1.details);
  const roPath = m1.messages[0]!.mount_path;
  const cat = await sh(`cat ${roPath}/seed.txt`);
  t.is(cat.stdout, 'seed\n');
  const w = await sh(`echo x > ${roPath}/new.txt`);
  t.not(w.code, 0);
  t.regex(w.stderr, /Read-only file system|Permission denied/);
  const over = await sh(`echo y > ${roPath}/seed.txt`);
  t.not(over.code, 0);
  t.is(await f.volumes.readFile(TENANT, ro, '/seed.txt').then(String), 'seed\n');

  const m2 = await call(client, M.mount, { execution_id: exec, volume_id: small, tenant_id: TENANT });
  t.is(m2.code, status.OK, m2.details);
  const smallPath = m2.messages[0]!.mount_path;
  const big = await sh(`head -c 4000 /dev/zero > ${smallPath}/big.bin`);
  t.not(big.code, 0);
  t.regex(big.stderr, /No space left on device/);
  t.is((await f.volumes.quota(TENANT, small)).used_bytes, 0, 'the refused write left nothing behind');
  const left = await f.rpc(S.getAttr, { execution_id: exec, volume_id: small, path: 'big.bin' });
  t.is(left.messages[0]?.attributes?.size, 0, 'the file was created empty and stayed empty');
  const fits = await sh(`head -c 500 /dev/zero > ${smallPath}/fits.bin && wc -c < ${smallPath}/fits.bin`);
  t.is(fits.code, 0, fits.stderr);

  t.is((await call(client, M.unmount, { execution_id: exec, volume_id: ro })).code, status.OK);
  t.is((await call(client, M.unmount, { execution_id: exec, volume_id: small })).code, status.OK);
});

test("Mount refuses another execution's volume (PERMISSION_DENIED), a second execution (ALREADY_EXISTS) and bad ids", async (t) => {
  const owner = await f.execution();
  const vol = await f.volume();
  await f.grant(owner, vol);
  const other = await f.execution();
  const denied = await call(client, M.mount, { execution_id: other, volume_id: vol, tenant_id: TENANT });
  t.is(denied.code, status.PERMISSION_DENIED, denied.details);
  t.false(await isMounted(path.join(prefix, vol)));
  const wrongTenant = await call(client, M.mount, { execution_id: owner, volume_id: vol, tenant_id: 'globex' });
  t.is(wrongTenant.code, status.NOT_FOUND, wrongTenant.details);

  t.is((await call(client, M.mount, { execution_id: owner, volume_id: vol, tenant_id: TENANT })).code, status.OK);
  await f.grant(other, vol);
  const second = await call(client, M.mount, { execution_id: other, volume_id: vol, tenant_id: TENANT });
  t.is(second.code, status.ALREADY_EXISTS);
  const wrongUnmount = await call(client, M.unmount, { execution_id: other, volume_id: vol });
  t.is(wrongUnmount.code, status.PERMISSION_DENIED);
  t.is((await call(client, M.unmount, { execution_id: owner, volume_id: vol })).code, status.OK);

  const bad = await call(client, M.mount, { execution_id: 'x', volume_id: vol, tenant_id: TENANT });
  t.is(bad.code, status.INVALID_ARGUMENT);
});

test('real tools through the mount: git clone and npm ci of a packed dependency; chmod to the same mode succeeds, to another is EPERM', async (t) => {
  const exec = await f.execution();
  const vol = await f.volume({ limit: 64 * 1024 * 1024 });
  await f.grant(exec, vol, 'read-write', '/workspace');
  const mounted = await call(client, M.mount, { execution_id: exec, volume_id: vol, tenant_id: TENANT });
  t.is(mounted.code, status.OK, mounted.details);
  const mnt = mounted.messages[0]!.mount_path;
  const repo = await mkdtemp(path.join(os.tmpdir(), 'orch-fuse-repo-'));
  t.teardown(() => rm(repo, { recursive: true, force: true }));
  const made = await sh(`cd ${repo} && mkdir -p src && echo 'export const a = 1;' > src/a.ts && echo hi > README && git init -q && git add -A && git -c user.name=t -c user.email=t@orch.invalid commit -qm one`);
  t.is(made.code, 0, made.stderr);
  // git sets .git/config.lock to the mode of .git/config: ENOSYS for chmod made every clone fail. (The files are
  // owned by the squash ids, not this user: git needs safe.directory to work in the clone.)
  const clone = await sh(`git clone -q file://${repo} ${mnt}/clone && cd ${mnt}/clone && git -c safe.directory='*' log --oneline | wc -l && cat src/a.ts && git -c safe.directory='*' status --porcelain | wc -l`);
  t.is(clone.code, 0, clone.stderr);
  t.is(clone.stdout, '1\nexport const a = 1;\n0\n');
  // npm ci, offline, of a project whose dependency is a packed tarball (extracted like a registry package).
  const root = process.cwd();
  const npm = await sh(
    `mkdir -p ${mnt}/proj/packs && cd ${mnt}/proj/packs && npm pack --silent --ignore-scripts ${root}/node_modules/ms >/dev/null && cd .. && ` +
      `echo '{"name":"p","version":"1.0.0","private":true,"dependencies":{"ms":"file:packs/ms-2.1.3.tgz"}}' > package.json && ` +
      `npm install --package-lock-only --offline --no-audit --no-fund --silent && npm ci --offline --no-audit --no-fund --silent --cache ${repo}/npm-cache && node -e "console.log(require('ms')(60000))"`,
  );
  t.is(npm.code, 0, npm.stderr);
  t.is(npm.stdout.trim(), '1m');
  const modes = await sh(`cd ${mnt}/clone && chmod 644 README && echo same && chmod 755 README`);
  t.is(modes.stdout, 'same\n');
  t.regex(modes.stderr, /Operation not permitted/);
  t.is((await f.volumes.get(TENANT, vol)).used_bytes, (await treeSize(await f.volumes.hostPath(TENANT, vol))).bytes, 'the quota is what is on disk');
  t.is((await call(client, M.unmount, { execution_id: exec, volume_id: vol })).code, status.OK);
});

test('touch and utimens through the mount: the file is marked modified now (a Write of no bytes, checked and recorded); git clone --no-hardlinks of a local path works; a read-only mount refuses touch (EROFS)', async (t) => {
  const exec = await f.execution();
  const vol = await f.volume({ limit: 64 * 1024 * 1024 });
  await f.grant(exec, vol, 'read-write', '/workspace');
  const ro = await f.volume();
  await f.volumes.writeFile(TENANT, ro, '/seed.txt', 'seed\n');
  await f.grant(exec, ro, 'read-only');
  const m = await call(client, M.mount, { execution_id: exec, volume_id: vol, tenant_id: TENANT });
  t.is(m.code, status.OK, m.details);
  const mnt = m.messages[0]!.mount_path;

  // An old file (its time set on the host disk, which the test may touch) is marked modified now by `touch`.
  await f.volumes.writeFile(TENANT, vol, '/old.txt', 'old\n');
  const host = await f.volumes.hostPath(TENANT, vol);
  const longAgo = new Date('2001-02-03T04:05:06Z');
  await utimes(path.join(host, 'old.txt'), longAgo, longAgo);
  const before = Date.now() - 2000;
  const touched = await sh(`cd ${mnt} && touch old.txt && touch new.txt && stat -c %s new.txt && cat old.txt`);
  t.is(touched.code, 0, touched.stderr);
  t.is(touched.stdout, '0\nold\n', 'touch creates an empty file and leaves an existing one whole');
  t.true((await stat(path.join(host, 'old.txt'))).mtimeMs >= before, 'the touched file is marked modified now');
  const seen = await sh(`stat -c %Y ${mnt}/old.txt`);
  t.true(Number(seen.stdout) * 1000 >= before, 'the mount shows the new time');
  // A directory's times are not kept by the FSAL: utimens on one is checked and changes nothing.
  t.is((await sh(`mkdir ${mnt}/d && touch ${mnt}/d`)).code, 0);

  // git copies a local repository's object files and then their times (utime): ENOSYS made the clone fail.
  const repo = await mkdtemp(path.join(os.tmpdir(), 'orch-fuse-repo-'));
  t.teardown(() => rm(repo, { recursive: true, force: true }));
  const made = await sh(`cd ${repo} && echo hi > README && git init -q && git add -A && git -c user.name=t -c user.email=t@orch.invalid commit -qm one`);
  t.is(made.code, 0, made.stderr);
  const clone = await sh(`git clone -q --no-hardlinks ${repo} ${mnt}/clone && cd ${mnt}/clone && git -c safe.directory='*' log --oneline | wc -l && cat README`);
  t.is(clone.code, 0, clone.stderr);
  t.is(clone.stdout, '1\nhi\n');
  // tar sets every extracted file's time; it exits 2 when it cannot. (Owners are squashed: as root it must not try to
  // keep them, which chown refuses with EPERM as NFS all_squash does.)
  const tar = await sh(`cd ${repo} && tar cf ${repo}/t.tar README && cd ${mnt} && mkdir x && tar xf ${repo}/t.tar --no-same-owner -C x && cat x/README`);
  t.is(tar.code, 0, tar.stderr);
  t.is(tar.stdout, 'hi\n');

  // The touch went through the FSAL as a Write of no bytes: checked like any write, and recorded.
  await f.fsal.flushEvents();
  const ev = await f.db.query<{ n: string }>(
    `SELECT COUNT(*) AS n FROM storage_events WHERE volume_id = $1 AND operation = 'write' AND path = '/old.txt' AND bytes = 0 AND status = 'OK'`,
    [vol],
  );
  t.is(Number(ev.rows[0]!.n), 1, 'the touch of old.txt is a write event of 0 bytes');

  const m2 = await call(client, M.mount, { execution_id: exec, volume_id: ro, tenant_id: TENANT });
  t.is(m2.code, status.OK, m2.details);
  const roPath = m2.messages[0]!.mount_path;
  const seedTime = (await stat(path.join(await f.volumes.hostPath(TENANT, ro), 'seed.txt'))).mtimeMs;
  const refused = await sh(`touch ${roPath}/seed.txt`);
  t.not(refused.code, 0);
  t.regex(refused.stderr, /Read-only file system/);
  t.is((await stat(path.join(await f.volumes.hostPath(TENANT, ro), 'seed.txt'))).mtimeMs, seedTime, 'the read-only file is untouched');

  t.is((await f.volumes.get(TENANT, vol)).used_bytes, (await treeSize(host)).bytes, 'the quota is what is on disk');
  t.is((await call(client, M.unmount, { execution_id: exec, volume_id: vol })).code, status.OK);
  t.is((await call(client, M.unmount, { execution_id: exec, volume_id: ro })).code, status.OK);
});

test('write-behind: rewrites of ranges still buffered or in flight, in one open, land in their order; the quota is exact', async (t) => {
  const exec = await f.execution();
  const vol = await f.volume({ limit: 64 * 1024 * 1024 });
  await f.grant(exec, vol, 'read-write', '/workspace');
  const m = await call(client, M.mount, { execution_id: exec, volume_id: vol, tenant_id: TENANT });
  t.is(m.code, status.OK, m.details);
  const mnt = m.messages[0]!.mount_path;
  // One open: 5 MiB of 'a' in 128 KiB writes (buffers ship while others are in flight), then rewrites that overlap
  // ranges still buffered or in flight: 'b' over [1 MiB, 3.5 MiB), 'c' over [3 MiB, 3 MiB + 10), 'd' at the end.
  const script = [
    "const fs = require('fs');",
    `const fd = fs.openSync(${JSON.stringify(`${mnt}/r.bin`)}, 'w');`,
    'const K = 128 * 1024, M = 1024 * 1024;',
    "for (let i = 0; i < 40; i++) fs.writeSync(fd, Buffer.alloc(K, 'a'), 0, K, i * K);",
    "fs.writeSync(fd, Buffer.alloc(2.5 * M, 'b'), 0, 2.5 * M, M);",
    "fs.writeSync(fd, Buffer.alloc(10, 'c'), 0, 10, 3 * M);",
    "fs.writeSync(fd, Buffer.from('d'), 0, 1, 5 * M);",
    'fs.closeSync(fd);',
  ].join('\n');
  const run = await new Promise<string | undefined>((resolve) => execFile(process.execPath, ['-e', script], { timeout: 120_000 }, (err, _o, stderr) => resolve(err ? stderr || err.message : undefined)));
  t.is(run, undefined);
  const M1 = 1024 * 1024;
  const want = Buffer.alloc(5 * M1 + 1, 'a');
  want.fill('b', M1, 3.5 * M1);
  want.fill('c', 3 * M1, 3 * M1 + 10);
  want.fill('d', 5 * M1);
  const got = await readFile(path.join(await f.volumes.hostPath(TENANT, vol), 'r.bin'));
  t.is(got.length, want.length);
  t.true(got.equals(want), 'the file is what the writes made, in their order');
  t.is((await f.volumes.get(TENANT, vol)).used_bytes, want.length);
  const back = await sh(`sha256sum < ${mnt}/r.bin`);
  t.is(back.stdout.split(' ')[0], createHash('sha256').update(want).digest('hex'), 'and reads back so through the mount');
  t.is((await call(client, M.unmount, { execution_id: exec, volume_id: vol })).code, status.OK);
});
