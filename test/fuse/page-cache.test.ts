// The kernel's page cache serves reads of a file that has not changed (the open's keep_cache, src/fuse/operations.ts;
// auto_cache under libfuse 2.9): reading the same file again through the mount asks the FSAL for no data, as a disk's
// page cache would. A change made by another path (the VolumeService, as a tool writes) is seen at the next open: the
// open asks the FSAL for the file's size and mtime and drops the pages when either moved.
import test from 'ava';
import { TENANT } from '../fsal/support.ts';
import { mountedVolume, sh } from './support.ts';

test('a file read again through the mount comes from the page cache; a change made elsewhere shows at the next open', async (t) => {
  const { f, vol, mnt, calls } = await mountedVolume(t, { limit: 64 * 1024 * 1024 });
  const reads = async (): Promise<number> => (await calls('/data.bin')).filter((c) => c === 'read OK').length;
  const readBytes = async (): Promise<number> => {
    await f.fsal.flushEvents();
    const r = await f.db.query<{ bytes: string }>("SELECT bytes FROM storage_events WHERE volume_id = $1 AND path = '/data.bin' AND operation = 'read'", [vol]);
    return r.rows.reduce((n, row) => n + Number(row.bytes), 0);
  };

  const made = await sh(`head -c 4194304 /dev/urandom > ${mnt}/data.bin && sha256sum ${mnt}/data.bin`);
  t.is(made.code, 0, made.stderr);
  const sum = made.stdout.split(' ')[0];
  const first = await sh(`sha256sum ${mnt}/data.bin`);
  t.is(first.stdout.split(' ')[0], sum);
  const afterFirst = await reads();
  const bytesFirst = await readBytes();
  for (let i = 0; i < 3; i++) t.is((await sh(`sha256sum ${mnt}/data.bin`)).stdout.split(' ')[0], sum);
  const afterRepeats = await reads();
  const bytesRepeats = (await readBytes()) - bytesFirst;
  t.log(`FSAL Reads: ${afterFirst} for the first two reads, ${afterRepeats - afterFirst} (${bytesRepeats} bytes) for three more`);
  // Without the kept pages the three reads ask the FSAL for the whole file each (12 MiB). With them, for nothing as a
  // rule; but on a loaded machine the kernel may ask again for a page it left not up to date (seen in a four-lane
  // suite run, stop 35, as write-read-cache saw in stop 34): at most a quarter of one copy of the file.
  t.true(bytesRepeats <= 1024 * 1024, `three more reads of an unchanged file asked the FSAL for ${bytesRepeats} bytes (${afterRepeats - afterFirst} Reads)`);

  // Same size, new bytes, written past the mount: the next open sees it, every page of it.
  await f.volumes.writeFile(TENANT, vol, '/data.bin', Buffer.alloc(4 * 1024 * 1024, 0x61));
  t.is((await sh(`head -c 4 ${mnt}/data.bin`)).stdout, 'aaaa', 'the change made through the VolumeService shows at the next open');
  t.is((await sh(`tail -c 4 ${mnt}/data.bin`)).stdout, 'aaaa', 'no page of the old content is left');
});
