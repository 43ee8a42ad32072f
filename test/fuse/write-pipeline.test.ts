// The mount's write-behind keeps several FSAL Writes of a path in flight (src/fuse/operations.ts WRITES_IN_FLIGHT):
// one at a time, a `dd` through the mount ran at the speed of one gRPC Write after another. Real FSAL, real
// PostgreSQL, a real kernel mount; the service's Write is wrapped to count the calls in it at once and to hold each
// for a while (longer for some), so that they overlap, land in another order than sent and answer out of order: the
// file still reads back whole, a stat right after shows its full size (the attributes of the latest answer, not the
// last to arrive), and the quota is what is on disk.
import test from 'ava';
import { createHash, randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { WRITES_IN_FLIGHT } from '../../src/fuse/operations.ts';
import { treeSize } from '../../src/volumes/disk.ts';
import { TENANT } from '../fsal/support.ts';
import { mountedVolume, sh } from './support.ts';

const MiB = 1024 * 1024;
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

test('dd through the mount: up to WRITES_IN_FLIGHT FSAL Writes of the file at once, landing out of order, and the file, its size and the quota right', async (t) => {
  const { f, vol, mnt } = await mountedVolume(t, { limit: 64 * MiB });
  let inService = 0;
  let most = 0;
  let calls = 0;
  const order: number[] = [];
  const write = f.fsal.write.bind(f.fsal);
  f.fsal.write = async (caller, req) => {
    inService += 1;
    most = Math.max(most, inService);
    const n = calls++;
    try {
      // Every third Write waits longest: the next ones pass it, in the volume's mutex and in their answers.
      await new Promise((r) => setTimeout(r, n % 3 === 0 ? 300 : 60));
      order.push(req.offset / MiB);
      return await write(caller, req);
    } finally {
      inService -= 1;
    }
  };
  const data = randomBytes(16 * MiB);
  const src = path.join(os.tmpdir(), `orch-fuse-pipe-${process.pid}-${Date.now()}.bin`);
  await writeFile(src, data);
  t.teardown(() => rm(src, { force: true }));

  const w = await sh(`dd if=${src} of=${mnt}/p.bin bs=1M 2>/dev/null && stat -c %s ${mnt}/p.bin && sha256sum ${mnt}/p.bin`);
  t.is(w.code, 0, w.stderr);
  const [size, sum] = w.stdout.trim().split('\n');
  t.log(`FSAL Writes: ${calls}, at most ${most} at once; applied in the order ${order.join(',')}`);
  t.is(most, WRITES_IN_FLIGHT, `up to ${WRITES_IN_FLIGHT} Writes in the service at once (one at a time before)`);
  t.true(order.some((o, i) => i > 0 && o < order[i - 1]!), 'some Writes landed after a later block');
  t.is(Number(size), data.length, 'a stat right after close shows the whole file');
  t.is(sum!.split(' ')[0], sha(data));
  t.is(sha(await f.volumes.readFile(TENANT, vol, '/p.bin')), sha(data), 'the volume holds the bytes');
  const host = await f.volumes.hostPath(TENANT, vol);
  t.is((await f.volumes.get(TENANT, vol)).used_bytes, (await treeSize(host)).bytes, 'the quota is what is on disk');
});

test('Writes refused while others are in flight: the writer hears ENOSPC, the blocks that fit are whole and nothing over the quota is stored', async (t) => {
  const { f, vol, mnt } = await mountedVolume(t, { limit: 6 * MiB });
  let started = 0;
  const seen: string[] = [];
  const write = f.fsal.write.bind(f.fsal);
  f.fsal.write = async (caller, req) => {
    started += 1;
    seen.push(`>${req.offset / MiB}`);
    await new Promise((r) => setTimeout(r, 30));
    return write(caller, req).then(
      (x) => (seen.push(`ok${req.offset / MiB}`), x),
      (e: unknown) => {
        seen.push(`no${req.offset / MiB}`);
        throw e;
      },
    );
  };
  const r = await sh(`dd if=/dev/zero of=${mnt}/full.bin bs=1M count=16 2>&1; echo "exit $?"`);
  t.regex(r.stdout, /No space left on device/, r.stdout);
  t.log(`Writes that reached the service: ${started}: ${seen.join(' ')}`);
  t.true(seen.some((s) => s.startsWith('no')), 'Writes were refused');
  const host = await f.volumes.hostPath(TENANT, vol);
  t.is((await treeSize(host)).bytes, 6 * MiB, 'the six blocks that fit, whole; none of the refused ones');
  t.is((await f.volumes.get(TENANT, vol)).used_bytes, (await treeSize(host)).bytes, 'the quota is what is on disk');
});
