// VolumeService on real PostgreSQL: volume lifecycle, tenant scoping, file operations, exact byte accounting,
// ENOSPC with nothing written, path and symlink escapes, TTL expiry and the reaper; and a PGlite smoke test.
import { existsSync } from 'node:fs';
import { mkdir, readFile, symlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import test from 'ava';
import { Errors, OrchError } from '../../src/errors/catalog.ts';
import { treeSize } from '../../src/volumes/disk.ts';
import { volumeFixture, type VolumeFixture } from './support.ts';

let fx: VolumeFixture;

test.before(async () => {
  fx = await volumeFixture('pg');
});

test.after.always(async () => {
  await fx?.close();
});

const T = 'acme';
const mk = (label = 'vol', limit = 1_000_000, tenant = T) => fx.volumes.create({ tenantId: tenant, ownerSubject: 'alice', label, sizeLimitBytes: limit });

async function code(t: { fail(m: string): void }, p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof OrchError) return err.code;
    throw err;
  }
  t.fail('expected an OrchError');
  return '';
}

test('create, get, list, rename, delete; the directory follows the row', async (t) => {
  const v = await mk('first');
  t.is(v.label, 'first');
  t.is(v.storage_class, 'persistent');
  t.is(v.size_limit_bytes, 1_000_000);
  t.is(v.used_bytes, 0);
  t.is(v.owner_subject, 'alice');
  t.is(v.tenant_id, T);
  t.is(v.expires_at, null);
  const dir = path.join(fx.dataDir, 'volumes', v.id);
  t.true(existsSync(dir));
  t.is((await fx.volumes.get(T, v.id)).id, v.id);
  t.true((await fx.volumes.list(T)).some((x) => x.id === v.id));
  const renamed = await fx.volumes.rename(T, v.id, 'second');
  t.is(renamed.label, 'second');
  t.is((await fx.volumes.get(T, v.id)).label, 'second');
  await fx.volumes.writeFile(T, v.id, 'a/b/c.txt', 'data');
  await fx.volumes.delete(T, v.id);
  t.false(existsSync(dir));
  t.is(await code(t, fx.volumes.get(T, v.id)), Errors.NOT_FOUND.code);
  t.is(await code(t, fx.volumes.delete(T, v.id)), Errors.NOT_FOUND.code);
  t.false((await fx.volumes.list(T)).some((x) => x.id === v.id));
  const row = await fx.db.query('SELECT id FROM volumes WHERE id = $1', [v.id]);
  t.is(row.rowCount, 0);
});

test('bad input is refused before anything is written', async (t) => {
  const bad = async (input: Record<string, unknown>) =>
    code(t, fx.volumes.create({ tenantId: T, ownerSubject: 'alice', label: 'x', sizeLimitBytes: 10, ...input } as never));
  t.is(await bad({ label: '' }), Errors.BAD_REQUEST.code);
  t.is(await bad({ label: 'a\u0001b' }), Errors.BAD_REQUEST.code);
  t.is(await bad({ sizeLimitBytes: 0 }), Errors.BAD_REQUEST.code);
  t.is(await bad({ sizeLimitBytes: 1.5 }), Errors.BAD_REQUEST.code);
  t.is(await bad({ storageClass: 'cold' }), Errors.BAD_REQUEST.code);
  t.is(await bad({ storageClass: 'persistent', ttlHours: 3 }), Errors.BAD_REQUEST.code);
  t.is(await bad({ storageClass: 'ephemeral', ttlHours: 0 }), Errors.BAD_REQUEST.code);
  const count = await fx.db.query(`SELECT count(*)::INT4 AS n FROM volumes WHERE label = 'x'`);
  t.is((count.rows[0] as { n: number }).n, 0);
  t.is(await code(t, fx.volumes.get(T, 'not-a-uuid')), Errors.NOT_FOUND.code);
  t.is(await code(t, fx.volumes.rename(T, (await mk()).id, '  ')), Errors.BAD_REQUEST.code);
});

test('another tenant sees nothing of a volume', async (t) => {
  const v = await mk('private');
  await fx.volumes.writeFile(T, v.id, 'secret.txt', 'top secret');
  const other = 'globex';
  t.false((await fx.volumes.list(other)).some((x) => x.id === v.id));
  t.is(await code(t, fx.volumes.get(other, v.id)), Errors.NOT_FOUND.code);
  t.is(await code(t, fx.volumes.readFile(other, v.id, 'secret.txt')), Errors.NOT_FOUND.code);
  t.is(await code(t, fx.volumes.writeFile(other, v.id, 'x.txt', 'x')), Errors.NOT_FOUND.code);
  t.is(await code(t, fx.volumes.listDir(other, v.id, '/')), Errors.NOT_FOUND.code);
  t.is(await code(t, fx.volumes.rename(other, v.id, 'mine')), Errors.NOT_FOUND.code);
  t.is(await code(t, fx.volumes.delete(other, v.id)), Errors.NOT_FOUND.code);
  t.is((await fx.volumes.readFile(T, v.id, 'secret.txt')).toString(), 'top secret');
});

test('file operations: write, read (whole and range), list, stat, mkdir, move, delete — used_bytes follows the disk', async (t) => {
  const v = await mk('files');
  const root = await fx.volumes.hostPath(T, v.id);
  const exact = async () => t.is((await fx.volumes.get(T, v.id)).used_bytes, (await treeSize(root)).bytes);

  const w = await fx.volumes.writeFile(T, v.id, '/docs/readme.md', '# hello\n');
  t.deepEqual(w, { path: '/docs/readme.md', bytes_written: 8, size: 8, used_bytes: 8 });
  t.is((await fx.volumes.readFile(T, v.id, 'docs/readme.md')).toString(), '# hello\n');
  t.is((await fx.volumes.readFile(T, v.id, 'docs/readme.md', { offset: 2, length: 3 })).toString(), 'hel');
  t.is((await fx.volumes.readFile(T, v.id, 'docs/readme.md', { offset: 6, length: 100 })).toString(), 'o\n');
  t.is((await fx.volumes.readFile(T, v.id, 'docs/readme.md', { offset: 100, length: 5 })).length, 0);
  await exact();

  // Overwrite with a shorter file: the difference is given back.
  await fx.volumes.writeFile(T, v.id, 'docs/readme.md', 'hi');
  t.is((await fx.volumes.get(T, v.id)).used_bytes, 2);

  // Positional writes: in place, past the end (the gap counts), a new file with create.
  await fx.volumes.writeAt(T, v.id, 'docs/readme.md', 1, Buffer.from('EY'));
  t.is((await fx.volumes.readFile(T, v.id, 'docs/readme.md')).toString(), 'hEY');
  const gap = await fx.volumes.writeAt(T, v.id, 'docs/readme.md', 5, Buffer.from('!'));
  t.is(gap.size, 6);
  t.deepEqual([...(await fx.volumes.readFile(T, v.id, 'docs/readme.md'))], [...Buffer.from('hEY\0\0!')]);
  t.is(await code(t, fx.volumes.writeAt(T, v.id, 'nope.bin', 0, Buffer.from('x'))), Errors.NOT_FOUND.code);
  await fx.volumes.writeAt(T, v.id, 'new.bin', 0, Buffer.from('abc'), { create: true });
  await exact();
  await fx.volumes.truncate(T, v.id, 'new.bin', 1);
  t.is((await fx.volumes.readFile(T, v.id, 'new.bin')).toString(), 'a');
  await exact();

  // Streams (an upload) land whole.
  await fx.volumes.writeFile(T, v.id, 'stream.txt', Readable.from([Buffer.from('one '), 'two ', Buffer.from('three')]));
  t.is((await fx.volumes.readFile(T, v.id, 'stream.txt')).toString(), 'one two three');

  // mkdir with parents; an existing directory is fine; a file in the way is a conflict.
  const d = await fx.volumes.mkdir(T, v.id, 'a/b/c');
  t.is(d.type, 'directory');
  t.is(d.path, '/a/b/c');
  await fx.volumes.mkdir(T, v.id, 'a/b/c');
  t.is(await code(t, fx.volumes.mkdir(T, v.id, 'a/b/c', { parents: false })), Errors.CONFLICT.code);
  t.is(await code(t, fx.volumes.mkdir(T, v.id, 'stream.txt')), Errors.CONFLICT.code);
  const created = await fx.volumes.createFile(T, v.id, 'a/empty', { exclusive: true });
  t.is(created.size, 0);
  t.is(await code(t, fx.volumes.createFile(T, v.id, 'a/empty', { exclusive: true })), Errors.CONFLICT.code);

  const listing = await fx.volumes.listDir(T, v.id, '/');
  t.deepEqual(
    listing.map((e) => [e.name, e.type]),
    [
      ['a', 'directory'],
      ['docs', 'directory'],
      ['new.bin', 'file'],
      ['stream.txt', 'file'],
    ],
  );
  const st = await fx.volumes.stat(T, v.id, 'stream.txt');
  t.is(st.size, 13);
  t.is(st.type, 'file');
  t.is(await code(t, fx.volumes.stat(T, v.id, 'missing')), Errors.NOT_FOUND.code);
  t.is(await code(t, fx.volumes.listDir(T, v.id, 'stream.txt')), Errors.CONFLICT.code);

  // Move: rename, into a new directory, refuse to overwrite unless asked, overwrite gives the old bytes back.
  await fx.volumes.move(T, v.id, 'stream.txt', 'moved/s.txt');
  t.is((await fx.volumes.readFile(T, v.id, 'moved/s.txt')).toString(), 'one two three');
  t.is(await code(t, fx.volumes.stat(T, v.id, 'stream.txt')), Errors.NOT_FOUND.code);
  t.is(await code(t, fx.volumes.move(T, v.id, 'new.bin', 'moved/s.txt')), Errors.CONFLICT.code);
  await fx.volumes.move(T, v.id, 'new.bin', 'moved/s.txt', { overwrite: true });
  t.is((await fx.volumes.readFile(T, v.id, 'moved/s.txt')).toString(), 'a');
  await exact();
  t.is(await code(t, fx.volumes.move(T, v.id, 'a', 'a/b/inside')), Errors.BAD_REQUEST.code);
  t.is(await code(t, fx.volumes.move(T, v.id, 'missing', 'x')), Errors.NOT_FOUND.code);

  // Delete: a non-empty directory needs recursive; the root cannot be deleted.
  t.is(await code(t, fx.volumes.remove(T, v.id, 'a')), Errors.CONFLICT.code);
  const before = (await fx.volumes.get(T, v.id)).used_bytes;
  await fx.volumes.writeFile(T, v.id, 'a/b/c/data.bin', Buffer.alloc(1000, 7));
  const removed = await fx.volumes.remove(T, v.id, 'a', { recursive: true });
  t.is(removed.freed_bytes, 1000);
  t.is((await fx.volumes.get(T, v.id)).used_bytes, before);
  t.is(await code(t, fx.volumes.remove(T, v.id, '/')), Errors.BAD_REQUEST.code);
  t.is(await code(t, fx.volumes.remove(T, v.id, 'a')), Errors.NOT_FOUND.code);
  await exact();

  const q = await fx.volumes.quota(T, v.id);
  t.is(q.used_bytes, (await treeSize(root)).bytes);
  t.is(q.available_bytes, q.size_limit_bytes - q.used_bytes);
  t.is(q.file_count, 2);
  t.is(q.directory_count, 2);
});

test('a write that does not fit is ENOSPC (STORAGE_FULL) and writes nothing; the old file stays', async (t) => {
  const v = await mk('small', 100);
  await fx.volumes.writeFile(T, v.id, 'keep.txt', Buffer.alloc(60, 1));
  const err = await t.throwsAsync(fx.volumes.writeFile(T, v.id, 'big.txt', Buffer.alloc(41, 2)));
  t.true(err instanceof OrchError);
  t.is((err as OrchError).code, Errors.STORAGE_FULL.code);
  t.is((err as OrchError).spec.http, 507);
  t.like((err as OrchError).details, { code: 'ENOSPC', size_limit_bytes: 100, used_bytes: 60 });
  t.is(await code(t, fx.volumes.stat(T, v.id, 'big.txt')), Errors.NOT_FOUND.code);
  t.is(await code(t, fx.volumes.writeFile(T, v.id, 'new/dir/big.txt', Buffer.alloc(41, 2))), Errors.STORAGE_FULL.code);
  t.is(await code(t, fx.volumes.stat(T, v.id, 'new')), Errors.NOT_FOUND.code, 'not even the parent directories were made');
  // Replacing keep.txt by 100 bytes fits (its 60 are given back); by 101 does not, and keep.txt is unchanged.
  t.is(await code(t, fx.volumes.writeFile(T, v.id, 'keep.txt', Buffer.alloc(101, 3))), Errors.STORAGE_FULL.code);
  t.deepEqual(await fx.volumes.readFile(T, v.id, 'keep.txt'), Buffer.alloc(60, 1));
  // A stream larger than the free space stops early.
  async function* endless() {
    for (let i = 0; i < 1000; i++) yield Buffer.alloc(10, 4);
  }
  t.is(await code(t, fx.volumes.writeFile(T, v.id, 'stream.bin', endless())), Errors.STORAGE_FULL.code);
  t.is(await code(t, fx.volumes.stat(T, v.id, 'stream.bin')), Errors.NOT_FOUND.code);
  // Offset writes and truncate reserve their growth first.
  t.is(await code(t, fx.volumes.writeAt(T, v.id, 'keep.txt', 95, Buffer.alloc(10, 5))), Errors.STORAGE_FULL.code);
  t.deepEqual(await fx.volumes.readFile(T, v.id, 'keep.txt'), Buffer.alloc(60, 1));
  t.is(await code(t, fx.volumes.truncate(T, v.id, 'keep.txt', 101)), Errors.STORAGE_FULL.code);
  await fx.volumes.writeFile(T, v.id, 'keep.txt', Buffer.alloc(100, 6));
  t.is((await fx.volumes.get(T, v.id)).used_bytes, 100);
  // No staging file is left behind.
  t.is((await treeSize(path.join(fx.dataDir, 'volumes', '.staging', v.id))).files, 0);
  t.is((await treeSize(await fx.volumes.hostPath(T, v.id))).bytes, 100);
});

test('paths cannot leave the volume: .., absolute climbs, symbolic links out, dangling links', async (t) => {
  const v = await mk('jail');
  const root = await fx.volumes.hostPath(T, v.id);
  const outside = path.join(fx.dataDir, 'outside');
  await mkdir(outside, { recursive: true });
  await writeFile(path.join(outside, 'secret'), 'outside secret');
  await symlink(outside, path.join(root, 'door'));
  await symlink(path.join(outside, 'secret'), path.join(root, 'secret-link'));
  await symlink(path.join(outside, 'not-yet'), path.join(root, 'dangling'));
  await mkdir(path.join(root, 'inner'));
  await writeFile(path.join(root, 'inner', 'ok.txt'), 'fine');
  await symlink(path.join(root, 'inner', 'ok.txt'), path.join(root, 'inner-link'));

  const P = Errors.PATH_OUTSIDE_BOUNDARY.code;
  t.is(await code(t, fx.volumes.readFile(T, v.id, '../outside/secret')), P);
  t.is(await code(t, fx.volumes.readFile(T, v.id, '/a/../../outside/secret')), P);
  t.is(await code(t, fx.volumes.writeFile(T, v.id, '../escape.txt', 'x')), P);
  t.is(await code(t, fx.volumes.readFile(T, v.id, 'door/secret')), P);
  t.is(await code(t, fx.volumes.readFile(T, v.id, 'secret-link')), P);
  t.is(await code(t, fx.volumes.writeFile(T, v.id, 'door/new.txt', 'x')), P);
  t.is(await code(t, fx.volumes.writeFile(T, v.id, 'dangling', 'x')), P);
  t.is(await code(t, fx.volumes.writeAt(T, v.id, 'dangling', 0, Buffer.from('x'), { create: true })), P);
  t.is(await code(t, fx.volumes.mkdir(T, v.id, 'door/sub')), P);
  t.is(await code(t, fx.volumes.move(T, v.id, 'inner/ok.txt', 'door/stolen.txt')), P);
  t.is(await code(t, fx.volumes.listDir(T, v.id, 'door')), P);
  t.is(await code(t, fx.volumes.readFile(T, v.id, 'a\0b')), Errors.BAD_REQUEST.code);
  t.false(existsSync(path.join(outside, 'new.txt')));
  t.false(existsSync(path.join(outside, 'not-yet')));
  t.is(await readFile(path.join(outside, 'secret'), 'utf8'), 'outside secret');
  // `..` that stays inside is fine, and so is a link that stays inside.
  t.is((await fx.volumes.readFile(T, v.id, 'inner/../inner/ok.txt')).toString(), 'fine');
  t.is((await fx.volumes.readFile(T, v.id, 'inner-link')).toString(), 'fine');
  // A link pointing out can be seen and removed as a link, never followed.
  t.is((await fx.volumes.stat(T, v.id, 'door')).type, 'symlink');
  t.is(await code(t, fx.volumes.stat(T, v.id, 'door/secret')), P);
  t.like(await fx.volumes.remove(T, v.id, 'door', { recursive: true }), { path: '/door', freed_bytes: 0 });
  t.like(await fx.volumes.remove(T, v.id, 'secret-link'), { freed_bytes: 0 });
  await fx.volumes.move(T, v.id, 'dangling', 'still-dangling');
  t.is(await code(t, fx.volumes.writeFile(T, v.id, 'still-dangling', 'x')), P);
  t.is(await readFile(path.join(outside, 'secret'), 'utf8'), 'outside secret', 'the target outside is untouched');
  t.true(existsSync(outside));
});

for (const chunk of [0, 64 * 1024]) {
  const how = chunk === 0 ? 'one UPDATE per write' : 'quota reserved ahead in 64 KiB chunks';
test(`16 concurrent writers (two services, as two processes) never exceed the quota and never corrupt a file (${how})`, async (t) => {
  const LIMIT = 600_000;
  const v = await fx.volumes.create({ tenantId: T, ownerSubject: 'alice', label: 'race', sizeLimitBytes: LIMIT });
  const root = await fx.volumes.hostPath(T, v.id);
  const services = chunk === 0 ? [fx.volumes, fx.another()] : [fx.another({ quotaChunkBytes: chunk }), fx.another({ quotaChunkBytes: chunk })];
  // Each file is self-describing: 16 header bytes "w<writer>-<iter>-<len>" padded, then the writer's fill byte.
  const payload = (writer: number, iter: number, len: number): Buffer => {
    const buf = Buffer.alloc(len, 65 + writer);
    buf.write(`w${writer}-${iter}-${len}`.padEnd(24, '.'), 0, 'latin1');
    return buf;
  };
  let peakDb = 0;
  let monitoring = true;
  const monitor = (async () => {
    while (monitoring) {
      const used = (await fx.volumes.get(T, v.id)).used_bytes;
      peakDb = Math.max(peakDb, used);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  let full = 0;
  let written = 0;
  const writer = async (w: number): Promise<void> => {
    // Writers 0-7 use one service, 8-15 the other; same-path races stay within one service (see service.ts).
    const svc = services[w < 8 ? 0 : 1]!;
    for (let i = 0; i < 12; i++) {
      const len = 24 + ((w * 7919 + i * 104729) % 90_000);
      // Own files, and a few paths shared with the writers of the same service.
      const p = i % 3 === 0 ? `/shared/${w < 8 ? 'a' : 'b'}${i % 2}.bin` : `/w${w}/f${i % 4}.bin`;
      try {
        if (i % 5 === 4) {
          // Positional appends to a per-writer log.
          const cur = await svc.stat(T, v.id, `/log${w}`).then((s) => s.size).catch(() => 0);
          await svc.writeAt(T, v.id, `/log${w}`, cur, Buffer.alloc(4096, 97 + w), { create: true });
        } else {
          await svc.writeFile(T, v.id, p, payload(w, i, len));
        }
        written += 1;
      } catch (err) {
        if (err instanceof OrchError && err.code === Errors.STORAGE_FULL.code) full += 1;
        else throw err;
      }
      if (i % 6 === 5) await svc.remove(T, v.id, `/w${w}/f${i % 4}.bin`).catch(() => undefined);
    }
  };
  await Promise.all(Array.from({ length: 16 }, (_, w) => writer(w)));
  monitoring = false;
  await monitor;

  // What each service reserved ahead and did not use goes back (at once here; after quotaIdleMs on its own).
  for (const svc of services) await svc.releaseReservations();
  const final = await fx.volumes.get(T, v.id);
  const disk = await treeSize(root);
  t.true(full > 0, 'the volume filled up at least once (the race was real)');
  t.true(written > 50);
  t.true(peakDb <= LIMIT, `used_bytes peaked at ${peakDb}`);
  t.true(final.used_bytes <= LIMIT);
  t.is(final.used_bytes, disk.bytes, 'used_bytes equals the bytes on disk');

  // Every file is one writer's whole payload.
  const check = async (dir: string, rel: string): Promise<void> => {
    for (const e of await fx.volumes.listDir(T, v.id, rel)) {
      if (e.type === 'directory') {
        await check(dir, e.path);
        continue;
      }
      const data = await fx.volumes.readFile(T, v.id, e.path);
      if (e.name.startsWith('log')) {
        const w = Number(e.name.slice(3));
        t.is(data.length % 4096, 0);
        t.true(data.every((b) => b === 97 + w), `${e.path} holds only its writer's bytes`);
        continue;
      }
      const m = /^w(\d+)-(\d+)-(\d+)\.*/.exec(data.subarray(0, 24).toString('latin1'));
      t.truthy(m, `${e.path} has a header`);
      const [, ws, is, ls] = m!;
      t.is(data.length, Number(ls), `${e.path} has the length its header says`);
      t.true(data.equals(payload(Number(ws), Number(is), Number(ls))), `${e.path} is whole`);
    }
  };
  await check(root, '/');
  t.is((await treeSize(path.join(fx.dataDir, 'volumes', '.staging', v.id))).files, 0);
});
}

test('ephemeral volumes expire: gone for callers at once, removed by the reaper (a pass, and the timer)', async (t) => {
  // An hour, then expired through its row after the write and hostPath below: a 6 s TTL ran out before the write at
  // load ~20 (stop 35), as volumes/node's 1 s one had (stop 33).
  const v = await fx.volumes.create({ tenantId: T, ownerSubject: 'alice', label: 'tmp', sizeLimitBytes: 1000, storageClass: 'ephemeral', ttlSeconds: 3600 });
  t.is(v.storage_class, 'ephemeral');
  t.is(v.ttl_hours, 24);
  t.truthy(v.expires_at);
  const keep = await fx.volumes.create({ tenantId: T, ownerSubject: 'alice', label: 'keeps', sizeLimitBytes: 1000, storageClass: 'ephemeral', ttlHours: 2 });
  t.true(Date.parse(keep.expires_at!) - Date.now() > 7000_000);
  await fx.volumes.writeFile(T, v.id, 'x.txt', 'soon gone');
  const dir = await fx.volumes.hostPath(T, v.id);
  await fx.db.query(`UPDATE volumes SET expires_at = now() - interval '1 second' WHERE id = $1`, [v.id]);
  t.is(await code(t, fx.volumes.get(T, v.id)), Errors.NOT_FOUND.code);
  t.is(await code(t, fx.volumes.writeFile(T, v.id, 'y.txt', 'late')), Errors.NOT_FOUND.code);
  t.true(existsSync(dir));
  t.true((await fx.volumes.reapOnce()) >= 1);
  t.false(existsSync(dir));
  t.is((await fx.db.query('SELECT id FROM volumes WHERE id = $1', [v.id])).rowCount, 0);
  t.is((await fx.volumes.get(T, keep.id)).id, keep.id);

  // The timer: a reaper every 100 ms removes a volume that expires after it started.
  // No reconcile here: the 16-writer test runs beside this one with a second service on the same volumes.
  const reaper = fx.volumes.startReaper(100, { reconcile: false });
  t.teardown(() => reaper.stop());
  const w = await fx.volumes.create({ tenantId: T, ownerSubject: 'alice', label: 'tmp2', sizeLimitBytes: 1000, storageClass: 'ephemeral', ttlSeconds: 1 });
  const wdir = path.join(fx.dataDir, 'volumes', w.id);
  t.true(existsSync(wdir));
  const deadline = Date.now() + 30_000;
  while (existsSync(wdir) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.false(existsSync(wdir));
  await reaper.stop();
  t.is((await fx.db.query('SELECT id FROM volumes WHERE id = $1', [w.id])).rowCount, 0);
});

test('the reaper removes only its own node\'s volumes; a delete from another node is finished by the owner', async (t) => {
  const otherNode = new (fx.volumes.constructor as typeof import('../../src/volumes/service.ts').VolumeService)({
    db: fx.db,
    dataDir: path.join(os.tmpdir(), 'orch-volumes-not-used'),
    nodeId: 'node-v2',
    logger: (await import('../../src/logging/logger.ts')).silentLogger(),
  });
  const v = await mk('owned-by-v1');
  await fx.volumes.writeFile(T, v.id, 'f', 'x');
  const dir = await fx.volumes.hostPath(T, v.id);
  t.is(await code(t, otherNode.readFile(T, v.id, 'f')), Errors.UNAVAILABLE.code);
  await otherNode.delete(T, v.id);
  t.is(await code(t, fx.volumes.get(T, v.id)), Errors.NOT_FOUND.code);
  t.is(await otherNode.reapOnce(), 0);
  t.true(existsSync(dir));
  t.true((await fx.volumes.reapOnce()) >= 1);
  t.false(existsSync(dir));
});

test('owner kind/ref filter, and recount after the directory was changed behind the service', async (t) => {
  const v = await fx.volumes.create({ tenantId: T, ownerSubject: 'bob', label: 'repo', sizeLimitBytes: 10_000, owner: { kind: 'git_binding', ref: 'b-1' } });
  t.is(v.owner_kind, 'git_binding');
  const mine = await fx.volumes.list(T, { ownerKind: 'git_binding', ownerRef: 'b-1' });
  t.deepEqual(mine.map((x) => x.id), [v.id]);
  const dir = await fx.volumes.hostPath(T, v.id);
  await writeFile(path.join(dir, 'cloned.txt'), Buffer.alloc(1234));
  t.is((await fx.volumes.get(T, v.id)).used_bytes, 0);
  const q = await fx.volumes.recount(T, v.id);
  t.is(q.used_bytes, 1234);
  t.is(q.file_count, 1);
});

test('PGlite: the same service works on the embedded database', async (t) => {
  const lite = await volumeFixture('pglite');
  t.teardown(() => lite.close());
  const v = await lite.volumes.create({ tenantId: T, ownerSubject: 'alice', label: 'lite', sizeLimitBytes: 10 });
  await lite.volumes.writeFile(T, v.id, 'a.txt', '12345');
  t.is(await code(t, lite.volumes.writeFile(T, v.id, 'b.txt', '123456')), Errors.STORAGE_FULL.code);
  await Promise.all([lite.volumes.writeFile(T, v.id, 'c.txt', '12'), lite.volumes.writeFile(T, v.id, 'd.txt', '34')]);
  t.is((await lite.volumes.quota(T, v.id)).used_bytes, 9);
  await lite.volumes.delete(T, v.id);
  t.deepEqual(await lite.volumes.list(T), []);
});

test('reconcile after a crash: usage re-measured, stale staging files removed, fresh ones kept', async (t) => {
  const own = await volumeFixture('pg', 'node-reconcile');
  t.teardown(() => own.close());
  const v = await own.volumes.create({ tenantId: T, ownerSubject: 'alice', label: 'crashy', sizeLimitBytes: 10_000 });
  await own.volumes.writeFile(T, v.id, 'a.txt', Buffer.alloc(300, 1));
  // A process that reserved 500 bytes and died before its rename.
  await own.db.query('UPDATE volumes SET used_bytes = used_bytes + 500 WHERE id = $1', [v.id]);
  const staging = path.join(own.dataDir, 'volumes', '.staging', v.id);
  await mkdir(staging, { recursive: true });
  await writeFile(path.join(staging, 'old.tmp'), Buffer.alloc(500));
  const old = new Date(Date.now() - 2 * 3600 * 1000);
  await utimes(path.join(staging, 'old.tmp'), old, old);
  await writeFile(path.join(staging, 'fresh.tmp'), Buffer.alloc(5));
  t.is((await own.volumes.get(T, v.id)).used_bytes, 800);
  const r = await own.volumes.reconcile();
  t.deepEqual(r, { volumes: 1, corrected: 1, staging_removed: 1 });
  t.is((await own.volumes.get(T, v.id)).used_bytes, 300);
  t.false(existsSync(path.join(staging, 'old.tmp')));
  t.true(existsSync(path.join(staging, 'fresh.tmp')));
  t.deepEqual(await own.volumes.reconcile(), { volumes: 1, corrected: 0, staging_removed: 0 });
});
