// A volume root's real path is resolved once (src/volumes/containment.ts), not on every call. What must not change
// with it: a path inside the root is still resolved each time, so a symbolic link made inside the volume after the
// root was resolved is still refused, and the root reached through a link of its own still works.
import test from 'ava';
import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { escapesThroughLink } from '../../src/volumes/containment.ts';

test('with the root resolved once, a link made inside the volume later is still refused', async (t) => {
  const base = await mkdtemp(path.join(os.tmpdir(), 'orch-realroot-'));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const real = path.join(base, 'real-vol');
  await mkdir(path.join(real, 'd'), { recursive: true });
  // The root as orch names it may itself be a link (a data directory on another disk).
  const root = path.join(base, 'vol');
  await symlink(real, root);
  t.false(await escapesThroughLink(root, path.join(root, 'd', 'file')));
  t.false(await escapesThroughLink(root, path.join(root, 'd', 'other')));
  await symlink(base, path.join(real, 'd', 'out'));
  t.true(await escapesThroughLink(root, path.join(root, 'd', 'out', 'x')), 'a link made after the root was resolved is refused');
  t.true(await escapesThroughLink(root, path.join(root, 'd', 'out')), 'the link itself resolves outside');
});
