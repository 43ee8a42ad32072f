// A volume granted read-only is mounted read-only: every change a shell or tool tries is refused with EROFS when it
// is tried (the kernel mount is `ro`), nothing reaches the volume, and no StorageEvent records a change. Before,
// `echo y >> ro/file` exited 0: the daemon's write-behind took the append's data, the FSAL refused the Write, and only
// the close heard EROFS, which the shell ignores.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { TENANT } from '../fsal/support.ts';
import { mountedVolume, sh } from './support.ts';

test('a read-only mount refuses >>, >, truncate, touch, mkdir, rm, mv, ln and dd with EROFS; nothing is written and no change is recorded', async (t) => {
  const m = await mountedVolume(t, { mode: 'read-only' });
  await m.f.volumes.writeFile(TENANT, m.vol, '/seed.txt', 'seed\n');
  await m.f.volumes.mkdir(TENANT, m.vol, '/dir');

  const table = await readFile('/proc/self/mounts', 'utf8');
  const line = table.split('\n').find((l) => l.split(' ')[1] === m.mnt);
  t.truthy(line, 'the volume is mounted');
  t.true(line!.split(' ')[3]!.split(',').includes('ro'), `the kernel mount is ro: ${line}`);

  const tries = [
    'echo y >> seed.txt',
    'echo y > seed.txt',
    'echo y > new.txt',
    'truncate -s 0 seed.txt',
    'truncate -s 100 seed.txt',
    'touch seed.txt',
    'touch new2.txt',
    'mkdir made',
    'rm seed.txt',
    'rmdir dir',
    'mv seed.txt moved.txt',
    'ln -s seed.txt link',
    'dd if=/dev/zero of=seed.txt bs=1 count=3 conv=notrunc status=none',
  ];
  for (const cmd of tries) {
    const r = await sh(`cd ${m.mnt} && ${cmd}`);
    t.not(r.code, 0, `${cmd} must fail`);
    t.regex(r.stderr, /Read-only file system/, `${cmd}: ${r.stderr}`);
  }

  const after = await sh(`cd ${m.mnt} && cat seed.txt && ls`);
  t.is(after.code, 0, after.stderr);
  t.is(after.stdout, 'seed\ndir\nseed.txt\n', 'the file is as it was and nothing was made');
  t.is(String(await m.f.volumes.readFile(TENANT, m.vol, '/seed.txt')), 'seed\n');
  t.is((await m.f.volumes.quota(TENANT, m.vol)).used_bytes, 5);

  await m.f.fsal.flushEvents();
  const changes = await m.f.db.query<{ operation: string; path: string }>(
    "SELECT operation, path FROM storage_events WHERE volume_id = $1 AND status = 'OK' AND operation IN ('write', 'create', 'remove', 'rename', 'mkdir', 'rmdir')",
    [m.vol],
  );
  t.deepEqual(changes.rows, [], 'no StorageEvent says a change happened');
});

test('a read-write mount is not ro: the same append works', async (t) => {
  const m = await mountedVolume(t);
  const r = await sh(`cd ${m.mnt} && echo x > f && echo y >> f && cat f`);
  t.is(r.code, 0, r.stderr);
  t.is(r.stdout, 'x\ny\n');
});
