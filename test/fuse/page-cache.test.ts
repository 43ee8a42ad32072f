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

  const made = await sh(`head -c 4194304 /dev/urandom > ${mnt}/data.bin && sha256sum ${mnt}/data.bin`);
  t.is(made.code, 0, made.stderr);
  const sum = made.stdout.split(' ')[0];
  const first = await sh(`sha256sum ${mnt}/data.bin`);
  t.is(first.stdout.split(' ')[0], sum);
  const afterFirst = await reads();
  for (let i = 0; i < 3; i++) t.is((await sh(`sha256sum ${mnt}/data.bin`)).stdout.split(' ')[0], sum);
  const afterRepeats = await reads();
  t.log(`FSAL Reads: ${afterFirst} for the first two reads, ${afterRepeats - afterFirst} for three more`);
  t.is(afterRepeats, afterFirst, 'three more reads of an unchanged file asked the FSAL for no data');

  // Same size, new bytes, written past the mount: the next open sees it, every page of it.
  await f.volumes.writeFile(TENANT, vol, '/data.bin', Buffer.alloc(4 * 1024 * 1024, 0x61));
  t.is((await sh(`head -c 4 ${mnt}/data.bin`)).stdout, 'aaaa', 'the change made through the VolumeService shows at the next open');
  t.is((await sh(`tail -c 4 ${mnt}/data.bin`)).stdout, 'aaaa', 'no page of the old content is left');
});
