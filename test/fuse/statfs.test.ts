// statfs through a mount (df, stat -f; npm and git read it to decide whether there is room): the volume's quota is the
// size and quota minus used is free and available, in 4 KiB blocks. Before, libfuse answered zeros (0 blocks). The
// usage is the FSAL's of its last authorization, reused for its access cache time (1 s): a statfs costs no query.
import test from 'ava';
import { mountedVolume, sh } from './support.ts';

const MiB = 1024 * 1024;

test('df and stat -f in a mount answer the quota as the size and what is left of it as free', async (t) => {
  const m = await mountedVolume(t, { limit: 10 * MiB });
  const fresh = await sh(`stat -f -c '%S %b %f %a' ${m.mnt}`);
  t.is(fresh.code, 0, fresh.stderr);
  t.is(fresh.stdout, `4096 ${(10 * MiB) / 4096} ${(10 * MiB) / 4096} ${(10 * MiB) / 4096}\n`);

  const w = await sh(`dd if=/dev/zero of=${m.mnt}/one.bin bs=1M count=1 status=none && head -c 100 /dev/zero > ${m.mnt}/small.bin`);
  t.is(w.code, 0, w.stderr);
  t.is((await m.f.volumes.quota('acme', m.vol)).used_bytes, MiB + 100);
  // The FSAL answers usage from its authorization, reused for 1 s.
  await new Promise((r) => setTimeout(r, 1200));
  const used = await sh(`stat -f -c '%S %b %f %a' ${m.mnt}`);
  const free = Math.floor((9 * MiB - 100) / 4096);
  t.is(used.stdout, `4096 ${(10 * MiB) / 4096} ${free} ${free}\n`, 'free is rounded down: df never promises a byte the quota refuses');
  const df = await sh(`df -B1 --output=size,used,avail ${m.mnt} | tail -1`);
  t.deepEqual(df.stdout.trim().split(/\s+/).map(Number), [10 * MiB, 10 * MiB - free * 4096, free * 4096]);
});
