// A directory the mount made keeps its names known past the first namesTtl: when they expire, the next lookup of a
// name in it renews them from one ReadDir (src/fuse/operations.ts relist), so a loop that keeps making files there
// (a shell loop, a checkout) asks the FSAL for a listing per namesTtl instead of a GetAttr of every new name. A name
// made there by another path still shows within namesTtl, and an exclusive create of it is refused.
import test from 'ava';
import { TENANT } from '../fsal/support.ts';
import { mountedVolume, sh } from './support.ts';

test('files made over several namesTtl in a directory the mount made: no GetAttr of the new names, a ReadDir per namesTtl at most', async (t) => {
  const ttl = 150;
  const { f, vol, mnt, calls } = await mountedVolume(t, { operations: { namesCacheMs: ttl } });
  const N = 30;
  const t0 = Date.now();
  const r = await sh(`mkdir ${mnt}/d && cd ${mnt}/d && i=0; while [ $i -lt ${N} ]; do head -c 1024 /dev/zero > f$i; sleep 0.05; i=$((i+1)); done; ls | wc -l`);
  const ms = Date.now() - t0;
  t.is(r.stdout.trim(), String(N), r.stderr);
  let lookedUp = 0;
  for (let i = 0; i < N; i++) {
    const c = await calls(`/d/f${i}`);
    t.true(c.includes('create OK'), `f${i}: ${c.join(', ')}`);
    if (c.includes('getattr NOT_FOUND')) lookedUp += 1;
  }
  const listings = (await calls('/d')).filter((c) => c === 'readdir OK').length;
  t.log(`${N} files in ${ms} ms (namesTtl ${ttl} ms): ${lookedUp} GetAttr NOT_FOUND, ${listings} ReadDir`);
  t.true(ms > 3 * ttl, 'the loop outlived namesTtl several times');
  t.is(lookedUp, 0, 'no new name was looked up in the FSAL');
  t.true(listings >= 1 && listings <= Math.ceil(ms / ttl) + 1, `${listings} listings`);

  // A name made there by another path shows once namesTtl has passed, and an exclusive create of it is refused.
  await f.volumes.writeFile(TENANT, vol, '/d/tool.txt', 'tool');
  const raced = await sh(`cd ${mnt}/d && set -C && echo mine > tool.txt`);
  t.not(raced.code, 0, 'the exclusive create of a name made elsewhere failed');
  await new Promise((res) => setTimeout(res, 2 * ttl + 1100));
  const seen = await sh(`cat ${mnt}/d/tool.txt`);
  t.is(seen.stdout, 'tool', seen.stderr);
});
