// The FUSE write-behind sends a large file's Writes over one FsalExtensionService.WriteStream (an orch extension beside
// FsalService): `dd` through the kernel, the real runtime gRPC server, PostgreSQL. The Writes still land in order,
// whole or refused, the quota exact; a node that does not serve the stream (UNIMPLEMENTED) gets the same Writes as
// unary FsalService calls.
import test from 'ava';
import type { FsalService } from '../../src/fsal/service.ts';
import { TENANT } from '../fsal/support.ts';
import { mountedVolume, sh } from './support.ts';

const MIB = 1024 * 1024;

/** Counts the Writes reaching the service, unary and streamed, with their offsets in the order they arrive. */
function countWrites(fsal: FsalService): { unary: number[]; streamed: number[] } {
  const seen = { unary: [] as number[], streamed: [] as number[] };
  const unary = fsal.write.bind(fsal);
  const streamed = fsal.writeInOrder.bind(fsal);
  fsal.write = (c, r) => {
    seen.unary.push(r.offset);
    return unary(c, r);
  };
  fsal.writeInOrder = (c, r, applied) => {
    seen.streamed.push(r.offset);
    return streamed(c, r, applied);
  };
  return seen;
}

test('dd bs=1M of 16 MiB through the mount: every Write goes over the stream, in order; the file, its size and the quota are right', async (t) => {
  const { f, vol, mnt } = await mountedVolume(t, { limit: 64 * MIB });
  const seen = countWrites(f.fsal);
  const dd = await sh(`head -c ${16 * MIB} /dev/urandom > ${mnt}/../src-${vol}.bin && dd if=${mnt}/../src-${vol}.bin of=${mnt}/big.bin bs=1M 2>&1 && stat -c %s ${mnt}/big.bin`);
  t.teardown(() => sh(`rm -f ${mnt}/../src-${vol}.bin`).then(() => undefined));
  t.is(dd.code, 0, dd.stdout);
  t.regex(dd.stdout, new RegExp(`^${16 * MIB}$`, 'm'), 'stat right after close shows the whole file');
  t.deepEqual(seen.streamed, Array.from({ length: 16 }, (_, i) => i * MIB), 'sixteen 1 MiB Writes over the stream, in order');
  t.deepEqual(seen.unary, [], 'no unary Write of the large file');
  const same = await sh(`cmp ${mnt}/../src-${vol}.bin ${mnt}/big.bin && echo same`);
  t.is(same.stdout.trim(), 'same', same.stderr);
  const disk = await f.volumes.readFile(TENANT, vol, '/big.bin');
  t.is(disk.length, 16 * MIB);
  t.is((await f.volumes.quota(TENANT, vol)).used_bytes, 16 * MIB, 'the quota is what is on disk');
});

test('a quota refusal mid-stream reaches dd (ENOSPC); exactly the blocks that fit are stored, a prefix, and the quota is what is on disk', async (t) => {
  const { f, vol, mnt } = await mountedVolume(t, { limit: 6 * MIB });
  const seen = countWrites(f.fsal);
  const dd = await sh(`dd if=/dev/zero of=${mnt}/big.bin bs=1M count=16 2>&1`);
  t.not(dd.code, 0);
  t.regex(dd.stdout, /No space left on device/);
  t.true(seen.streamed.length >= 7, `the Writes went over the stream (${seen.streamed.length})`);
  const disk = await f.volumes.readFile(TENANT, vol, '/big.bin');
  t.is(disk.length, 6 * MIB, 'the six blocks that fit, and nothing after the refused one');
  t.is((await f.volumes.quota(TENANT, vol)).used_bytes, disk.length);
});

test('a node without FsalExtensionService (UNIMPLEMENTED): the same dd lands through unary Writes, in order', async (t) => {
  const { f, vol, mnt } = await mountedVolume(t, { limit: 64 * MIB, writeStream: false });
  const seen = countWrites(f.fsal);
  const dd = await sh(`dd if=/dev/zero bs=1M count=8 2>/dev/null | tr '\\0' 'x' > ${mnt}/big.bin && stat -c %s ${mnt}/big.bin`);
  t.is(dd.code, 0, dd.stderr);
  t.is(dd.stdout.trim(), String(8 * MIB));
  t.deepEqual(seen.streamed, []);
  t.deepEqual(
    seen.unary.filter((o) => o % MIB === 0),
    Array.from({ length: 8 }, (_, i) => i * MIB),
    'every block as a unary Write, in order',
  );
  const disk = await f.volumes.readFile(TENANT, vol, '/big.bin');
  t.true(disk.equals(Buffer.alloc(8 * MIB, 'x')));
  t.is((await f.volumes.quota(TENANT, vol)).used_bytes, 8 * MIB);
});
