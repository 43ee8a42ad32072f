// The filesystem round trips of an FSAL call (each a libuv request through the thread pool and back to the event loop,
// 20–150 µs on this machine; docs/BENCHMARKS.md, issue 21, "fsal"): an exclusive Create (every create of the FUSE
// mount) is tried at once, O_CREAT|O_EXCL under the symlink check, and runs the parent and name checks only when it
// fails; a Write resolves its path once, under the volume's mutex; the root's real path, resolved once, is not asked
// again as a resolved target's parent. Counted with async_hooks (every fs request is an
// FSREQPROMISE or FSREQCALLBACK resource). The refusals stay what the checks answer.
import { createHook } from 'node:async_hooks';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import test from 'ava';
import { errnoOf, statusName } from '../../src/fsal/errors.ts';
import { fsalFixture, TENANT } from './support.ts';

test('an exclusive Create takes 5 filesystem round trips, a Write 6, a GetAttr one level down 2; refusals are unchanged', async (t) => {
  const f = await fsalFixture();
  t.teardown(() => f.close());
  const exec = await f.execution();
  const vol = await f.volume({ limit: 64 * 1024 * 1024 });
  await f.grant(exec, vol);
  const ids = { execution_id: exec, volume_id: vol };
  const c = { tenantId: TENANT };
  let fsRequests = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'FSREQPROMISE' || type === 'FSREQCALLBACK') fsRequests++;
    },
  });
  const count = async (fn: () => Promise<unknown>): Promise<number> => {
    fsRequests = 0;
    hook.enable();
    try {
      await fn();
    } finally {
      hook.disable();
    }
    return fsRequests;
  };
  await f.fsal.mkDir(c, { ...ids, path: 'd', mode: 0 });
  await f.fsal.create(c, { ...ids, path: 'd/warm', mode: 0, exclusive: true });

  const creates: number[] = [];
  const writes: number[] = [];
  const getattrs: number[] = [];
  for (let i = 0; i < 5; i++) {
    creates.push(await count(() => f.fsal.create(c, { ...ids, path: `d/f${i}`, mode: 0, exclusive: true })));
    writes.push(await count(() => f.fsal.write(c, { ...ids, path: `d/f${i}`, offset: 0, data: Buffer.alloc(1024, i) })));
    getattrs.push(await count(() => f.fsal.getAttr(c, { ...ids, path: `d/f${i}` })));
  }
  // Before: 10 per Create (the parent's and the name's checks, each resolving its path, then the create's own
  // resolution) and 8 per Write (its path resolved before the mutex and again under it).
  t.true(Math.max(...creates) <= 5, `Create: ${creates.join(', ')} filesystem requests`);
  t.true(Math.max(...writes) <= 6, `Write: ${writes.join(', ')} filesystem requests`);
  // GetAttr resolves the name's directory (`d`), whose parent is the root: its real path is known, 3 → 2.
  t.true(Math.max(...getattrs) <= 2, `GetAttr: ${getattrs.join(', ')} filesystem requests`);
  const got = await f.fsal.read(c, { ...ids, path: 'd/f3', offset: 0, length: 4096 });
  t.deepEqual(got.data, Buffer.alloc(1024, 3));

  // A failed exclusive Create left nothing and is refused as the checks say.
  const host = await f.volumes.hostPath(TENANT, vol);
  await writeFile(path.join(host, 'file'), 'x');
  await symlink('nowhere', path.join(host, 'd', 'dangling'));
  await mkdir(path.join(host, 'sub'));
  await symlink('/etc', path.join(host, 'out'));
  const refusal = async (p: string): Promise<string> => {
    const err = await f.fsal.create(c, { ...ids, path: p, mode: 0, exclusive: true }).then(
      () => undefined,
      (e: unknown) => e,
    );
    return err === undefined ? 'OK' : `${statusName(err)} ${errnoOf(err) ?? ''}`.trim();
  };
  t.is(await refusal('d/f0'), 'ALREADY_EXISTS EEXIST', 'an existing file');
  t.is(await refusal('sub'), 'ALREADY_EXISTS EEXIST', 'an existing directory');
  t.is(await refusal('d/dangling'), 'ALREADY_EXISTS EEXIST', 'a dangling symbolic link is an existing name');
  t.is(await refusal('missing/x'), 'NOT_FOUND ENOENT', 'a missing parent');
  t.is(await refusal('file/x'), 'FAILED_PRECONDITION ENOTDIR', 'a parent that is a file');
  t.is((await refusal('out/x')).split(' ')[0], 'INVALID_ARGUMENT', 'a parent that leads out of the volume');
  t.is((await f.fsal.getAttr(c, { ...ids, path: 'd/f0' })).attributes?.size, 1024, 'the refused Create did not truncate the file');
});
