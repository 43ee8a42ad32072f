// The mount's kernel remembers a missing name for 1 s (negative_timeout=1, src/fuse/binding.ts), as it remembers a
// found one: tools probe the same missing paths again and again (a git clone made 278 NOT_FOUND GetAttr calls out of
// 670). A name made through the mount right after its lookup is seen at once (the kernel replaces its negative entry);
// one made by another path (the VolumeService, as a tool writes) shows once the second has passed.
import test from 'ava';
import { TENANT } from '../fsal/support.ts';
import { mountedVolume, sh } from './support.ts';

test('a missing name is looked up once per second through the mount; one made through the mount shows at once, one made elsewhere within the second', async (t) => {
  const { f, vol, mnt } = await mountedVolume(t);
  const notFound = async (p: string): Promise<number> => {
    await f.fsal.flushEvents();
    const r = await f.db.query<{ n: string }>("SELECT count(*) AS n FROM storage_events WHERE volume_id = $1 AND operation = 'getattr' AND status = 'NOT_FOUND' AND path = $2", [vol, p]);
    return Number(r.rows[0]!.n);
  };

  // Ten probes of one missing name, back to back (shell builtins): the kernel answers the repeats itself. Each FSAL
  // call was one per probe; now one per second of probing (normally one, more only if the machine stalls the shell).
  const probes = await sh(`cd ${mnt} && for i in 1 2 3 4 5 6 7 8 9 10; do test -e missing && exit 9; done; echo gone`);
  t.is(probes.stdout, 'gone\n', probes.stderr);
  const calls = await notFound('/missing');
  t.true(calls >= 1 && calls < 10, `${calls} FSAL lookups for 10 probes`);

  // Made through the mount right after the lookup: there at once.
  const made = await sh(`cd ${mnt} && test -e fresh; echo hi > fresh && cat fresh`);
  t.is(made.stdout, 'hi\n', made.stderr);

  // Made by another path after the mount saw it missing: shows once the kernel's second has passed.
  t.is((await sh(`test -e ${mnt}/from-tool || echo missing`)).stdout, 'missing\n');
  await f.volumes.writeFile(TENANT, vol, '/from-tool', 'tool');
  const deadline = Date.now() + 30_000;
  let seen = '';
  while (Date.now() < deadline && seen !== 'tool') {
    seen = (await sh(`cat ${mnt}/from-tool 2>/dev/null`)).stdout;
    if (seen !== 'tool') await new Promise((r) => setTimeout(r, 100));
  }
  t.is(seen, 'tool', 'the file made through the VolumeService shows through the mount');
});
