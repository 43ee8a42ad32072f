// What the libfuse 3 binding changes for a mount of a volume (real FSAL, real PostgreSQL): the kernel sends writes and
// reads of up to 1 MiB (libfuse 2.9: 128 KiB at most); a file the mount just wrote reads back from the page cache with no FSAL Read
// (libfuse 2.9's auto_cache dropped those pages, since the write itself moved the mtime); a change made by another
// path (the VolumeService, as a tool writes), of the same size or not, still shows at the next open; and with writes
// answered before they reach the FSAL, a quota refusal still reaches the writer, with nothing over quota stored.
import test from 'ava';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { treeSize } from '../../src/volumes/disk.ts';
import { TENANT } from '../fsal/support.ts';
import { mountedVolume, sh } from './support.ts';

const MiB = 1024 * 1024;
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

test('dd bs=1M through the mount: 1 MiB kernel writes reach the daemon, and the file reads back with no FSAL Read', async (t) => {
  const writes: number[] = [];
  const { f, vol, mnt, calls } = await mountedVolume(t, { limit: 64 * MiB, operations: { observe: (op, len) => void (op === 'write' && writes.push(len)) } });
  const data = randomBytes(4 * MiB);
  const src = path.join(os.tmpdir(), `orch-fuse-src-${process.pid}-${Date.now()}.bin`);
  await writeFile(src, data);
  t.teardown(() => rm(src, { force: true }));

  const w = await sh(`dd if=${src} of=${mnt}/w.bin bs=1M 2>/dev/null && cmp ${src} ${mnt}/w.bin && sha256sum ${mnt}/w.bin`);
  t.is(w.code, 0, w.stderr);
  t.is(w.stdout.split(' ')[0], sha(data));
  t.log(`kernel write requests: ${writes.length}, largest ${Math.max(...writes)} bytes`);
  t.is(Math.max(...writes), MiB, 'the kernel sent 1 MiB writes (libfuse 2.9: 128 KiB at most)');
  t.true(writes.length <= 8, `4 MiB in ${writes.length} kernel writes`);
  // Without the kept pages, cmp and sha256sum read the whole file twice (8 MiB) from the FSAL. With them, none of it
  // as a rule; but on a loaded machine the kernel may leave a page a write copied only in part not up to date and ask
  // for it (three FSAL Reads in a four-lane suite run at load ~15), which a lone small read answers with just those
  // bytes. So: at most a quarter of one copy of the file, counted from the reads' StorageEvents.
  const reads = (await calls('/w.bin')).filter((c) => c.startsWith('read'));
  await f.fsal.flushEvents();
  const readBytes = (await f.db.query<{ bytes: string }>("SELECT bytes FROM storage_events WHERE volume_id = $1 AND path = '/w.bin' AND operation = 'read'", [vol])).rows.reduce((n, r) => n + Number(r.bytes), 0);
  t.log(`FSAL Reads after the write: ${reads.length}, ${readBytes} bytes`);
  t.true(readBytes <= MiB, `cmp and sha256sum (two more opens) read the file from the page cache the write left: ${readBytes} bytes from the FSAL`);
  t.is(sha(await f.volumes.readFile(TENANT, vol, '/w.bin')), sha(data), 'and the volume holds the bytes');
});

test('a file written elsewhere is read through the mount in kernel requests of more than 128 KiB', async (t) => {
  const reads: number[] = [];
  const { f, vol, mnt } = await mountedVolume(t, { limit: 64 * MiB, operations: { observe: (op, len) => void (op === 'read' && reads.push(len)) } });
  const data = randomBytes(8 * MiB);
  await f.volumes.writeFile(TENANT, vol, '/r.bin', data);
  const r = await sh(`dd if=${mnt}/r.bin bs=1M 2>/dev/null | sha256sum`);
  t.is(r.stdout.split(' ')[0], sha(data), r.stderr);
  t.log(`kernel read requests: ${reads.length}, largest ${Math.max(...reads)} bytes`);
  t.true(Math.max(...reads) > 128 * 1024, 'the kernel read more than 128 KiB at a time (libfuse 2.9: 128 KiB at most)');
});

test('a lone small read amid a file asks the FSAL for those bytes, not a 2 MiB read-ahead block', async (t) => {
  const { f, vol, mnt } = await mountedVolume(t, { limit: 64 * MiB });
  const data = randomBytes(8 * MiB);
  await f.volumes.writeFile(TENANT, vol, '/lone.bin', data);
  const r = await sh(`dd if=${mnt}/lone.bin bs=4096 skip=1000 count=1 2>/dev/null | sha256sum`);
  t.is(r.stdout.split(' ')[0], sha(data.subarray(4096 * 1000, 4096 * 1001)), r.stderr);
  await f.fsal.flushEvents();
  const ev = await f.db.query<{ bytes: string }>("SELECT bytes FROM storage_events WHERE volume_id = $1 AND path = '/lone.bin' AND operation = 'read' ORDER BY seq", [vol]);
  const bytes = ev.rows.map((x) => Number(x.bytes));
  t.log(`FSAL Reads: ${bytes.join(', ')} bytes`);
  t.true(bytes.length > 0 && bytes.reduce((a, b) => a + b, 0) < 128 * 1024, 'the FSAL was asked for the page or so the kernel asked for');
});

test('a change made through the VolumeService to a file the mount has cached shows at the next open: same size, larger, smaller', async (t) => {
  const { f, vol, mnt } = await mountedVolume(t, { limit: 64 * MiB });
  const w = await sh(`head -c 1048576 /dev/zero | tr '\\0' x > ${mnt}/c.txt && head -c 3 ${mnt}/c.txt && tail -c 3 ${mnt}/c.txt`);
  t.is(w.stdout, 'xxxxxx', w.stderr);
  // Each change comes right after a read through the mount, within the kernel's attribute timeout (1 s).
  await f.volumes.writeFile(TENANT, vol, '/c.txt', Buffer.alloc(MiB, 'y'));
  t.is((await sh(`head -c 3 ${mnt}/c.txt; tail -c 3 ${mnt}/c.txt`)).stdout, 'yyyyyy', 'same size, new bytes');
  await f.volumes.writeFile(TENANT, vol, '/c.txt', Buffer.alloc(2 * MiB + 5, 'z'));
  const grown = await sh(`wc -c < ${mnt}/c.txt; tail -c 3 ${mnt}/c.txt`);
  t.is(grown.stdout, `${2 * MiB + 5}\nzzz`, 'larger: every byte of it');
  await f.volumes.writeFile(TENANT, vol, '/c.txt', 'short');
  t.is((await sh(`cat ${mnt}/c.txt`)).stdout, 'short', 'smaller: nothing of the old content past its end');
});

test('a quota refusal reaches the writer at write or close, and nothing over the quota is stored', async (t) => {
  const limit = 2 * MiB;
  const { f, vol, mnt } = await mountedVolume(t, { limit });
  // dd of 3 MiB in 1 MiB writes into a 2 MiB volume: the writes are answered before their FSAL Writes, so the refusal
  // comes back at a later write or at close; dd must fail either way.
  const dd = await sh(`dd if=/dev/zero of=${mnt}/big.bin bs=1M count=3 2>&1`);
  t.not(dd.code, 0, 'dd was told');
  t.regex(dd.stdout, /No space left on device/);
  const host = await f.volumes.hostPath(TENANT, vol);
  const used = (await f.volumes.get(TENANT, vol)).used_bytes;
  t.true(used <= limit, `${used} bytes used of ${limit}`);
  t.is(used, (await treeSize(host)).bytes, 'the quota is what is on disk');
  const size = (await sh(`wc -c < ${mnt}/big.bin`)).stdout.trim();
  t.is(Number(size), (await f.volumes.readFile(TENANT, vol, '/big.bin')).length, 'the mount shows the size the volume holds');

  // A write smaller than a write-behind buffer is answered at once and sent at close: the refusal comes with close().
  t.is((await sh(`rm ${mnt}/big.bin`)).code, 0);
  await f.volumes.writeFile(TENANT, vol, '/fill.bin', Buffer.alloc(limit - 100 * 1024, 2));
  const script = [
    "const fs = require('fs');",
    `const fd = fs.openSync(${JSON.stringify(`${mnt}/late.bin`)}, 'w');`,
    'fs.writeSync(fd, Buffer.alloc(200 * 1024, 1));',
    "console.log('written');",
    "try { fs.closeSync(fd); console.log('closed'); } catch (e) { console.log(e.code); }",
  ].join('\n');
  const out = await new Promise<string>((resolve) => execFile(process.execPath, ['-e', script], { timeout: 60_000 }, (_e, so, se) => resolve(`${so}${se}`)));
  t.is(out.trim(), 'written\nENOSPC', 'the write was answered, close() answered its refused Write');
  const after = (await f.volumes.get(TENANT, vol)).used_bytes;
  t.is(after, (await treeSize(host)).bytes, 'the quota is what is on disk');
  t.is(after, limit - 100 * 1024, 'nothing of the refused Write was stored');
  // The kernel was told those bytes were written and cached them: the next open must not serve them.
  const seen = await sh(`wc -c < ${mnt}/late.bin; od -An -tx1 -N1 ${mnt}/late.bin | tr -d ' \n'`);
  t.is(seen.stdout, '0\n', 'the mount shows the file as the volume holds it (empty), not the refused bytes');
});
