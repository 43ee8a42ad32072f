// What a checkout asks of the FSAL per new file (git clone through the mount: 5 calls per file, docs/FSAL.md): a
// lookup of the missing name, the kernel's second lookup of it for an exclusive create (O_CREAT|O_EXCL always asks
// again, whatever it remembers), Create, Write, and a stat once the file is written; a new directory was a lookup,
// MkDir and a lookup of the new directory. The daemon answers the second lookup from the first (a name it was told
// is missing, within the second the kernel keeps such names too), the stat from the attributes its last Write was
// answered with, the new directory's lookup from the MkDir's answer, and the lookups of names in a directory it has
// just made (empty but for what it made there) itself.
import test from 'ava';
import { TENANT } from '../fsal/support.ts';
import { mountedVolume, sh } from './support.ts';

test('an exclusive create of a new file and a stat after writing it cost Create and Write and one lookup', async (t) => {
  // The daemon remembers names for a minute instead of a second, so that what is counted does not depend on the load.
  const { f, vol, mnt, calls } = await mountedVolume(t, { operations: { namesCacheMs: 60_000 } });

  // `set -C` (noclobber): the shell opens the file O_CREAT|O_EXCL, as git's checkout does.
  const made = await sh(`cd ${mnt} && set -C && echo 'checked out' > new.txt && stat -c %s new.txt`);
  t.is(made.code, 0, made.stderr);
  t.is(made.stdout, '12\n');
  t.deepEqual(await calls('/new.txt'), ['getattr NOT_FOUND', 'create OK', 'write OK']);
  // A new directory, as a checkout makes them: looked up missing, made, then looked up again (answered by the MkDir).
  const dir = await sh(`cd ${mnt} && mkdir sub && stat -c %F sub`);
  t.is(dir.stdout, 'directory\n', dir.stderr);
  t.deepEqual(await calls('/sub'), ['getattr NOT_FOUND', 'mkdir OK']);

  // Files made in a directory this mount just made: it was empty, so their lookups need no FSAL call. One removed and
  // one renamed there are seen as they are afterwards.
  const filled = await sh(`cd ${mnt}/sub && for i in 1 2 3; do echo x > f$i; done && rm f2 && mv f3 f4 && ls && test ! -e f2 && test ! -e f3 && cat f4`);
  t.is(filled.stdout, 'f1\nf4\nx\n', filled.stderr);
  for (const name of ['f1', 'f2', 'f3']) t.false((await calls(`/sub/${name}`)).includes('getattr NOT_FOUND'), `${name} was looked up in the FSAL`);

  // A name made by another path after the daemon heard it was missing is not hidden from an exclusive create: the
  // FSAL refuses it (EEXIST), as the disk would.
  t.is((await sh(`test -e ${mnt}/raced.txt || echo missing`)).stdout, 'missing\n');
  await f.volumes.writeFile(TENANT, vol, '/raced.txt', 'tool');
  const raced = await sh(`cd ${mnt} && set -C && echo mine > raced.txt`);
  t.not(raced.code, 0, 'the exclusive create of a name made elsewhere failed');
  t.is((await f.volumes.readFile(TENANT, vol, '/raced.txt')).toString(), 'tool');

  // Odd-sized writes that grow a small write-behind buffer to a whole CHUNK: the bytes land as written, in one FSAL
  // Write per MiB and one for the tail (a grown buffer never ships a small Write of its own).
  const odd = await sh(`cd ${mnt} && head -c 3145733 /dev/urandom > /tmp/orch-odd-$$ && dd if=/tmp/orch-odd-$$ of=odd.bin bs=3000 2>/dev/null && cmp /tmp/orch-odd-$$ odd.bin && rm /tmp/orch-odd-$$ && echo same`);
  t.is(odd.stdout, 'same\n', odd.stderr);
  t.is((await calls('/odd.bin')).filter((c) => c === 'write OK').length, 4);

  // A truncate while the file's writes are still buffered (its descriptor open): the size shown afterwards is the new
  // one, not the one the buffered Write was answered with.
  const cut = await sh(`cd ${mnt} && exec 3> cut.txt && printf 'hello world' >&3 && truncate -s 5 cut.txt && stat -c %s cut.txt && cat cut.txt`);
  t.is(cut.code, 0, cut.stderr);
  t.is(cut.stdout, '5\nhello');
});

test("the daemon's name cache keeps at most cacheMax entries: past it, the oldest names are asked for again", async (t) => {
  // A minute per name, at most 8 names: twenty probes of missing names overflow it.
  const { mnt, calls } = await mountedVolume(t, { operations: { namesCacheMs: 60_000, cacheMax: 8 } });
  const probe = (names: string[]): Promise<unknown> => sh(`cd ${mnt} && for n in ${names.join(' ')}; do test -e $n; test -e $n; done`);
  const names = Array.from({ length: 20 }, (_, i) => `m${i}`);
  await probe(names);
  // The kernel remembers missing names for a second too: wait it out, so the daemon's memory is what is measured.
  await new Promise((r) => setTimeout(r, 1500));
  await probe(['m0', 'm19']);
  t.is((await calls('/m19')).length, 1, 'a recent name is answered from memory');
  t.is((await calls('/m0')).length, 2, 'the oldest name was dropped and asked for again');
});

