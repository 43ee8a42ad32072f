// orch's libfuse 3 binding (native/fuse3, src/fuse/fuse3.ts) on its own: a real kernel mount served by handlers of
// this test, no FSAL. It is the binding in use on this machine (so CI proves it builds at `npm ci`); the kernel
// agreed to 1 MiB requests; and a handler that answers twice, throws, answers late, or keeps the read buffer past
// its answer does not crash the process nor leave the kernel waiting.
import test from 'ava';
import { execFile } from 'node:child_process';
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fuseBindingName, type FuseOperations, type FuseStats } from '../../src/fuse/binding.ts';
import { loadFuse3, type Fuse3Info } from '../../src/fuse/fuse3.ts';
import { sh } from './support.ts';

async function isMounted(p: string): Promise<boolean> {
  const table = await readFile('/proc/self/mounts', 'utf8');
  return table.split('\n').some((l) => l.split(' ')[1] === p);
}

test('the libfuse 3 binding is built on this machine and is the one mounts use', (t) => {
  t.deepEqual(fuseBindingName(), { name: 'libfuse3' }, 'scripts/setup-fuse.sh installs libfuse3-dev; npm ci builds native/fuse3');
  t.regex(loadFuse3().libfuseVersion, /^3\./);
});

test('ORCH_FUSE_BINDING=fuse-native selects the libfuse 2.9 fallback, and says why', async (t) => {
  const code = "import('./src/fuse/binding.ts').then((b) => process.stdout.write(JSON.stringify(b.fuseBindingName())))";
  const out = await new Promise<string>((resolve, reject) =>
    execFile(path.resolve('node_modules/.bin/tsx'), ['-e', code], { env: { ...process.env, ORCH_FUSE_BINDING: 'fuse-native' }, timeout: 60_000 }, (err, so, se) => (err ? reject(new Error(se || err.message)) : resolve(so))),
  );
  t.deepEqual(JSON.parse(out), { name: 'fuse-native', why: 'ORCH_FUSE_BINDING=fuse-native' });
});

test('a handler that answers twice, throws, answers late or keeps its buffer: the kernel gets one answer each, the process lives', async (t) => {
  const { Fuse } = loadFuse3();
  const mnt = await mkdtemp(path.join(os.tmpdir(), 'orch-fuse3-raw-'));
  const now = new Date();
  const stats = (mode: number, size: number): FuseStats => ({ mode, uid: 0, gid: 0, size, dev: 0, nlink: 1, ino: 0, rdev: 0, blksize: 4096, blocks: 1, atime: now, mtime: now, ctime: now });
  const errors: string[] = [];
  let kept: Buffer | undefined;
  const ops: FuseOperations = {
    getattr(p, cb) {
      if (p === '/') return cb(0, stats(0o40755, 0));
      if (p === '/twice') {
        cb(0, stats(0o100644, 5));
        cb(0, stats(0o100644, 7));
        return cb(-2);
      }
      if (p === '/throws') throw new Error('a handler bug');
      if (p === '/late') return void setTimeout(() => cb(0, stats(0o100644, 9)), 200);
      if (p === '/data') return cb(0, stats(0o100644, 5));
      cb(-2);
    },
    open(_p, _flags, cb) {
      cb(0, 42, false);
    },
    read(_p, fd, buf, len, pos, cb) {
      t.is(fd, 42, 'the fd open answered');
      kept = buf;
      const part = Buffer.from('hello').subarray(pos, pos + len);
      part.copy(buf);
      cb(part.length);
    },
    release(_p, _fd, cb) {
      cb(0);
    },
  };
  const fuse = new Fuse(mnt, ops, { fsname: 'orch-test', subtype: 'orch', onError: (_err, op) => errors.push(op) });
  await new Promise<void>((resolve, reject) => fuse.mount((err) => (err ? reject(err) : resolve())));
  t.teardown(async () => {
    await new Promise<void>((resolve) => fuse.unmount(() => resolve()));
    await rm(mnt, { recursive: true, force: true });
  });
  t.true(await isMounted(mnt));

  const r = await sh(`cd ${mnt} && stat -c %s twice && stat -c %s late && cat data && echo`);
  t.is(r.stdout, '5\n9\nhello\n', r.stderr);
  t.is(kept?.length, 0, 'the read buffer kept past its answer was detached: it no longer reaches libfuse memory');
  const threw = await sh(`stat ${mnt}/throws`);
  t.not(threw.code, 0);
  t.regex(threw.stderr, /Input\/output error/);
  t.deepEqual(errors, ['getattr'], 'the exception reached onError');
  const info = (fuse as unknown as { info(): Fuse3Info }).info();
  t.is(info.maxWrite, 1024 * 1024, 'the kernel takes writes of 1 MiB');
  t.false(info.autoInvalData, 'pages are kept or dropped by each open, not by mtimes seen in getattr');
  t.false(info.writebackCache);

  await new Promise<void>((resolve, reject) => fuse.unmount((err) => (err ? reject(err) : resolve())));
  t.false(await isMounted(mnt), 'unmounted');
});

test('Unmount with a file still open in the mount detaches it at once; the open file is served until it is closed', async (t) => {
  const { Fuse } = loadFuse3();
  const mnt = await mkdtemp(path.join(os.tmpdir(), 'orch-fuse3-busy-'));
  t.teardown(() => rm(mnt, { recursive: true, force: true }));
  const now = new Date();
  const stats = (mode: number, size: number): FuseStats => ({ mode, uid: 0, gid: 0, size, dev: 0, nlink: 1, ino: 0, rdev: 0, blksize: 4096, blocks: 1, atime: now, mtime: now, ctime: now });
  let exited = false;
  const ops: FuseOperations = {
    getattr: (p, cb) => (p === '/' ? cb(0, stats(0o40755, 0)) : p === '/data' ? cb(0, stats(0o100644, 5)) : cb(-2)),
    open: (_p, _flags, cb) => cb(0, 1, false),
    read: (_p, _fd, buf, len, pos, cb) => cb(Buffer.from('hello').subarray(pos, pos + len).copy(buf)),
    release: (_p, _fd, cb) => cb(0),
  };
  const fuse = new Fuse(mnt, ops, { onExit: () => (exited = true) });
  await new Promise<void>((resolve, reject) => fuse.mount((err) => (err ? reject(err) : resolve())));
  // A reader opens the file, then reads it only after the Unmount below.
  const marker = `${mnt}.opened`;
  t.teardown(() => rm(marker, { force: true }));
  const reader = sh(`exec 3< ${mnt}/data && echo opened && touch ${marker} && sleep 1 && cat <&3`);
  for (let i = 0; i < 100 && !(await access(marker).then(() => true, () => false)); i++) await new Promise((r) => setTimeout(r, 50));
  await new Promise<void>((resolve, reject) => fuse.unmount((err) => (err ? reject(err) : resolve())));
  t.false(await isMounted(mnt), 'detached at once');
  t.false(exited, 'the loop still serves the open file');
  t.is((await reader).stdout, 'opened\nhello', 'the open file was read after Unmount');
  for (let i = 0; i < 50 && !exited; i++) await new Promise((r) => setTimeout(r, 50));
  t.true(exited, 'the loop ended once the file was closed');
});
