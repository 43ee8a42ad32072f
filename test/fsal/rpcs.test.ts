// Every FsalService RPC through a real gRPC client against the runtime server (bearer auth on), on a real
// PostgreSQL database and real volume directories: success, NOT_FOUND, PERMISSION_DENIED for another execution's
// volume, read-only mounts refusing writes, path escapes, quota (ENOSPC, nothing partially written), the other
// status codes of docs/FSAL.md, and one StorageEvent row per operation.
import test from 'ava';
import { readFile, stat, symlink, utimes } from 'node:fs/promises';
import path from 'node:path';
import { status, type MethodDefinition } from '@grpc/grpc-js';
import { FsalServiceService as S } from '../../src/gen/orch/fsal/v1/fsal.js';
import { listStorageEvents, storageStream, type StorageEvent } from '../../src/fsal/events.ts';
import { eventually, fsalFixture, SQUASH, TENANT, type FsalFixture } from './support.ts';

let f: FsalFixture;
test.before(async () => {
  f = await fsalFixture();
});
test.after.always(async () => {
  await f?.close();
});

/** A fresh execution with its own granted volume. */
async function setup(o: { limit?: number; mode?: 'read-write' | 'read-only'; filesystem?: { read: string[]; write: string[] } } = {}) {
  const exec = await f.execution(o.filesystem ? { filesystem: o.filesystem } : {});
  const vol = await f.volume(o.limit ? { limit: o.limit } : {});
  await f.grant(exec, vol, o.mode ?? 'read-write');
  const ids = { execution_id: exec, volume_id: vol };
  return { exec, vol, ids };
}

const ALL = ['lookup', 'getAttr', 'readDir', 'read', 'write', 'create', 'remove', 'rename', 'mkDir', 'rmDir'] as const;
type Rpc = (typeof ALL)[number];
const WRITES: Rpc[] = ['write', 'create', 'remove', 'rename', 'mkDir', 'rmDir'];

/** A request of `rpc` on `p` that would succeed on a volume holding file a.txt and empty directory d. */
function requestFor(rpc: Rpc, ids: { execution_id: string; volume_id: string }, p: string): unknown {
  switch (rpc) {
    case 'readDir':
      return { ...ids, path: p, offset: 0, limit: 0 };
    case 'read':
      return { ...ids, path: p, offset: 0, length: 10 };
    case 'write':
      return { ...ids, path: p, offset: 0, data: Buffer.from('x') };
    case 'create':
      return { ...ids, path: p, mode: 0, exclusive: true };
    case 'rename':
      return { ...ids, path: p, new_path: 'moved' };
    case 'mkDir':
      return { ...ids, path: p, mode: 0 };
    default:
      return { ...ids, path: p };
  }
}

function method(rpc: Rpc): MethodDefinition<unknown, unknown> {
  return S[rpc] as unknown as MethodDefinition<unknown, unknown>;
}

test('every RPC succeeds on an execution volume, attributes squashed, and the disk shows the result', async (t) => {
  const { vol, ids } = await setup();
  const host = await f.volumes.hostPath(TENANT, vol);

  const mk = await f.rpc(S.mkDir, { ...ids, path: '/src', mode: 0 });
  t.is(mk.code, status.OK, mk.details);
  t.true(mk.messages[0]!.attributes!.is_dir);

  const cr = await f.rpc(S.create, { ...ids, path: 'src/a.txt', mode: 0o600, exclusive: true });
  t.is(cr.code, status.OK, cr.details);
  t.truthy(cr.messages[0]!.handle);
  t.deepEqual([cr.messages[0]!.attributes!.uid, cr.messages[0]!.attributes!.gid], [SQUASH.uid, SQUASH.gid]);

  const w1 = await f.rpc(S.write, { ...ids, path: 'src/a.txt', offset: 0, data: Buffer.from('hello world') });
  t.is(w1.code, status.OK, w1.details);
  t.is(w1.messages[0]!.bytes_written, 11);
  t.is(w1.messages[0]!.attributes!.size, 11);
  const w2 = await f.rpc(S.write, { ...ids, path: 'src/a.txt', offset: 6, data: Buffer.from('FSAL!') });
  t.is(w2.code, status.OK, w2.details);
  t.is(await readFile(path.join(host, 'src', 'a.txt'), 'utf8'), 'hello FSAL!');

  const lk = await f.rpc(S.lookup, { ...ids, path: '/src/a.txt' });
  t.is(lk.code, status.OK, lk.details);
  t.is(lk.messages[0]!.handle, cr.messages[0]!.handle, 'a handle is stable for the life of the file');
  const ga = await f.rpc(S.getAttr, { ...ids, path: 'src/a.txt' });
  t.is(ga.messages[0]!.attributes!.size, 11);
  t.false(ga.messages[0]!.attributes!.is_dir);
  t.is(ga.messages[0]!.attributes!.uid, SQUASH.uid);
  t.true(ga.messages[0]!.attributes!.mtime_unix_ms > Date.now() - 60_000);

  const rd = await f.rpc(S.read, { ...ids, path: 'src/a.txt', offset: 6, length: 100 });
  t.is(rd.code, status.OK, rd.details);
  t.is(Buffer.from(rd.messages[0]!.data).toString(), 'FSAL!');
  t.true(rd.messages[0]!.eof);
  const part = await f.rpc(S.read, { ...ids, path: 'src/a.txt', offset: 0, length: 5 });
  t.is(Buffer.from(part.messages[0]!.data).toString(), 'hello');
  t.false(part.messages[0]!.eof);

  await f.rpc(S.create, { ...ids, path: 'src/b.txt', mode: 0, exclusive: true });
  const ls = await f.rpc(S.readDir, { ...ids, path: 'src', offset: 0, limit: 0 });
  t.deepEqual(ls.messages[0]!.entries.map((e) => e.name), ['a.txt', 'b.txt']);
  t.true(ls.messages[0]!.eof);
  const page = await f.rpc(S.readDir, { ...ids, path: 'src', offset: 1, limit: 1 });
  t.deepEqual(page.messages[0]!.entries.map((e) => e.name), ['b.txt']);
  t.true(page.messages[0]!.eof);
  const first = await f.rpc(S.readDir, { ...ids, path: '', offset: 0, limit: 1 });
  t.deepEqual(first.messages[0]!.entries.map((e) => [e.name, e.attributes!.is_dir]), [['src', true]]);

  const rn = await f.rpc(S.rename, { ...ids, path: 'src/a.txt', new_path: 'src/b.txt' });
  t.is(rn.code, status.OK, rn.details);
  t.is(await readFile(path.join(host, 'src', 'b.txt'), 'utf8'), 'hello FSAL!', 'rename replaces an existing file');
  t.is((await f.volumes.quota(TENANT, vol)).used_bytes, 11, 'the replaced file no longer counts');

  const rm = await f.rpc(S.remove, { ...ids, path: 'src/b.txt' });
  t.is(rm.code, status.OK, rm.details);
  t.is((await f.volumes.quota(TENANT, vol)).used_bytes, 0);
  const rmd = await f.rpc(S.rmDir, { ...ids, path: 'src' });
  t.is(rmd.code, status.OK, rmd.details);
  const empty = await f.rpc(S.readDir, { ...ids, path: '/', offset: 0, limit: 0 });
  t.deepEqual(empty.messages[0]!.entries, []);
});

test('a volume the execution owns (owner_kind execution) needs no grant', async (t) => {
  const exec = await f.execution();
  const vol = await f.volume({ owner: exec });
  const cr = await f.rpc(S.create, { execution_id: exec, volume_id: vol, path: 'mine.txt', mode: 0, exclusive: true });
  t.is(cr.code, status.OK, cr.details);
});

test('NOT_FOUND for a missing path, for every RPC', async (t) => {
  const { ids } = await setup();
  for (const rpc of ALL) {
    // create and mkDir need a missing parent to be NOT_FOUND.
    const p = rpc === 'create' || rpc === 'mkDir' ? 'no/such' : 'nothing-here';
    const out = await f.rpc(method(rpc), requestFor(rpc, ids, p));
    t.is(out.code, status.NOT_FOUND, `${rpc}: ${out.details}`);
  }
  const unknownVolume = await f.rpc(S.getAttr, { ...ids, volume_id: '00000000-0000-4000-8000-000000000000', path: '' });
  t.is(unknownVolume.code, status.NOT_FOUND);
  const unknownExecution = await f.rpc(S.getAttr, { ...ids, execution_id: '00000000-0000-4000-8000-000000000000', path: '' });
  t.is(unknownExecution.code, status.NOT_FOUND);
});

test("PERMISSION_DENIED on another execution's volume, for every RPC; nothing changes", async (t) => {
  const owner = await setup();
  await f.rpc(S.create, { ...owner.ids, path: 'a.txt', mode: 0, exclusive: true });
  await f.rpc(S.mkDir, { ...owner.ids, path: 'd', mode: 0 });
  const intruder = await f.execution();
  const ids = { execution_id: intruder, volume_id: owner.vol };
  for (const rpc of ALL) {
    const p = rpc === 'create' || rpc === 'mkDir' ? 'new' : rpc === 'rmDir' ? 'd' : 'a.txt';
    const out = await f.rpc(method(rpc), requestFor(rpc, ids, p));
    t.is(out.code, status.PERMISSION_DENIED, `${rpc}: ${out.details}`);
    t.regex(out.details, /neither owns volume .* nor was granted it/);
  }
  const ls = await f.rpc(S.readDir, { ...owner.ids, path: '', offset: 0, limit: 0 });
  t.deepEqual(ls.messages[0]!.entries.map((e) => e.name), ['a.txt', 'd']);
});

test('another tenant cannot reach the execution at all (NOT_FOUND), and an ended execution is refused', async (t) => {
  const { ids, exec } = await setup();
  const other = await f.rpc(S.getAttr, { ...ids, path: '' }, 'globex');
  t.is(other.code, status.NOT_FOUND);
  await f.db.query(`UPDATE executions SET status = 'completed' WHERE id = $1`, [exec]);
  const ended = await eventually(() => f.rpc(S.getAttr, { ...ids, path: '' }), status.PERMISSION_DENIED);
  t.is(ended.code, status.PERMISSION_DENIED);
  t.regex(ended.details, /has ended/);
});

test('a read-only mount refuses every write RPC with PERMISSION_DENIED (EROFS) and still serves reads', async (t) => {
  const { vol, ids } = await setup({ mode: 'read-only' });
  await f.volumes.writeFile(TENANT, vol, '/a.txt', 'seed');
  await f.volumes.mkdir(TENANT, vol, '/d');
  for (const rpc of WRITES) {
    const p = rpc === 'create' || rpc === 'mkDir' ? 'new' : rpc === 'rmDir' ? 'd' : 'a.txt';
    const out = await f.rpc(method(rpc), requestFor(rpc, ids, p));
    t.is(out.code, status.PERMISSION_DENIED, `${rpc}: ${out.details}`);
    t.regex(out.details, /read-only/);
  }
  for (const rpc of ['lookup', 'getAttr', 'read'] as const) {
    const out = await f.rpc(method(rpc), requestFor(rpc, ids, 'a.txt'));
    t.is(out.code, status.OK, `${rpc}: ${out.details}`);
  }
  t.is(await f.volumes.readFile(TENANT, vol, '/a.txt').then(String), 'seed');
});

test('Read through a symbolic link inside the volume: eof is the file\'s, not the link\'s; a Write answers the file after it; a directory is EISDIR', async (t) => {
  const { vol, ids } = await setup();
  const host = await f.volumes.hostPath(TENANT, vol);
  await f.volumes.writeFile(TENANT, vol, '/data.txt', 'x'.repeat(1000));
  await symlink('data.txt', path.join(host, 'link'));
  // The link's own size is 8 (its target's name); the file behind it holds 1000 bytes, so 100 of them are no end.
  const head = await f.rpc(S.read, { ...ids, path: 'link', offset: 0, length: 100 });
  t.is(head.code, status.OK, head.details);
  t.is(head.messages[0]!.data.length, 100);
  t.false(head.messages[0]!.eof, 'not the end of the 1000-byte file');
  const tail = await f.rpc(S.read, { ...ids, path: 'link', offset: 900, length: 100 });
  t.true(tail.messages[0]!.eof);
  // A Write goes to the file itself (through a link it is refused, as before); its answer is the file after it.
  const w = await f.rpc(S.write, { ...ids, path: 'data.txt', offset: 1000, data: Buffer.from('yz') });
  t.is(w.code, status.OK, w.details);
  t.is(Number(w.messages[0]!.attributes!.size), 1002, 'the size of the file written, after the write');
  t.false(w.messages[0]!.attributes!.is_dir);
  t.is((await f.volumes.quota(TENANT, vol)).used_bytes, 1002);
  await f.volumes.mkdir(TENANT, vol, '/d');
  for (const out of [await f.rpc(S.read, { ...ids, path: 'd', offset: 0, length: 10 }), await f.rpc(S.write, { ...ids, path: 'd', offset: 0, data: Buffer.from('a') })]) {
    t.is(out.code, status.FAILED_PRECONDITION, out.details);
    t.regex(out.details, /is a directory/);
  }
});

test('path escapes are INVALID_ARGUMENT for every RPC, through `..` and through a symbolic link', async (t) => {
  const { vol, ids } = await setup();
  for (const rpc of ALL) {
    const out = await f.rpc(method(rpc), requestFor(rpc, ids, '../../etc/passwd'));
    t.is(out.code, status.INVALID_ARGUMENT, `${rpc}: ${out.details}`);
  }
  await f.volumes.writeFile(TENANT, vol, '/a.txt', 'x');
  const rn = await f.rpc(S.rename, { ...ids, path: 'a.txt', new_path: '../outside.txt' });
  t.is(rn.code, status.INVALID_ARGUMENT);
  const host = await f.volumes.hostPath(TENANT, vol);
  await symlink('/etc', path.join(host, 'etc-link'));
  const viaLink = await f.rpc(S.read, { ...ids, path: 'etc-link/passwd', offset: 0, length: 100 });
  t.is(viaLink.code, status.INVALID_ARGUMENT, viaLink.details);
  const writeViaLink = await f.rpc(S.create, { ...ids, path: 'etc-link/evil', mode: 0, exclusive: true });
  t.is(writeViaLink.code, status.INVALID_ARGUMENT, writeViaLink.details);
  const bad = await f.rpc(S.getAttr, { ...ids, execution_id: 'not-a-uuid', path: '' });
  t.is(bad.code, status.INVALID_ARGUMENT);
});

test('quota: a write past the limit is RESOURCE_EXHAUSTED (ENOSPC) and writes nothing', async (t) => {
  const { vol, ids } = await setup({ limit: 100 });
  await f.rpc(S.create, { ...ids, path: 'f.bin', mode: 0, exclusive: true });
  const ok = await f.rpc(S.write, { ...ids, path: 'f.bin', offset: 0, data: Buffer.alloc(60, 1) });
  t.is(ok.code, status.OK);
  const over = await f.rpc(S.write, { ...ids, path: 'f.bin', offset: 60, data: Buffer.alloc(50, 2) });
  t.is(over.code, status.RESOURCE_EXHAUSTED);
  t.regex(over.details, /ENOSPC|no space/i);
  const host = await f.volumes.hostPath(TENANT, vol);
  const onDisk = await readFile(path.join(host, 'f.bin'));
  t.is(onDisk.length, 60, 'nothing of the refused write reached the file');
  t.true(onDisk.every((b) => b === 1));
  t.is((await f.volumes.quota(TENANT, vol)).used_bytes, 60);
  // A sparse write far past the end counts its hole too and is refused whole.
  const hole = await f.rpc(S.write, { ...ids, path: 'f.bin', offset: 1000, data: Buffer.from('x') });
  t.is(hole.code, status.RESOURCE_EXHAUSTED);
  t.is((await readFile(path.join(host, 'f.bin'))).length, 60);
  // Overwriting inside the file needs no space.
  const inside = await f.rpc(S.write, { ...ids, path: 'f.bin', offset: 0, data: Buffer.alloc(60, 3) });
  t.is(inside.code, status.OK);
});

test('a Write of no bytes marks the file modified now and changes no byte or quota, even past the end (it reserved the gap before); read-only refuses it', async (t) => {
  const { vol, ids } = await setup({ limit: 10_000 });
  await f.volumes.writeFile(TENANT, vol, '/a.txt', '0123456789');
  const host = await f.volumes.hostPath(TENANT, vol);
  const longAgo = new Date('2001-02-03T04:05:06Z');
  await utimes(path.join(host, 'a.txt'), longAgo, longAgo);
  const before = Date.now() - 1000;
  const out = await f.rpc(S.write, { ...ids, path: 'a.txt', offset: 5000, data: Buffer.alloc(0) });
  t.is(out.code, status.OK, out.details);
  t.is(out.messages[0]!.bytes_written, 0);
  t.is(out.messages[0]!.attributes!.size, 10);
  t.true(Number(out.messages[0]!.attributes!.mtime_unix_ms) >= before, 'marked modified now');
  t.true((await stat(path.join(host, 'a.txt'))).mtimeMs >= before);
  t.is(String(await readFile(path.join(host, 'a.txt'))), '0123456789');
  t.is((await f.volumes.quota(TENANT, vol)).used_bytes, 10, 'no quota taken for a gap nothing was written into');
  await f.volumes.mkdir(TENANT, vol, '/d');
  const dir = await f.rpc(S.write, { ...ids, path: 'd', offset: 0, data: Buffer.alloc(0) });
  t.is(dir.code, status.FAILED_PRECONDITION);

  const ro = await setup({ mode: 'read-only' });
  await f.volumes.writeFile(TENANT, ro.vol, '/a.txt', 'seed');
  const refused = await f.rpc(S.write, { ...ro.ids, path: 'a.txt', offset: 0, data: Buffer.alloc(0) });
  t.is(refused.code, status.PERMISSION_DENIED);
  t.regex(refused.details, /read-only/);
});

test('ALREADY_EXISTS and FAILED_PRECONDITION cases', async (t) => {
  const { ids } = await setup();
  await f.rpc(S.create, { ...ids, path: 'a.txt', mode: 0, exclusive: true });
  await f.rpc(S.mkDir, { ...ids, path: 'd', mode: 0 });
  await f.rpc(S.create, { ...ids, path: 'd/inner', mode: 0, exclusive: true });
  t.is((await f.rpc(S.create, { ...ids, path: 'a.txt', mode: 0, exclusive: true })).code, status.ALREADY_EXISTS);
  t.is((await f.rpc(S.mkDir, { ...ids, path: 'd', mode: 0 })).code, status.ALREADY_EXISTS);
  t.is((await f.rpc(S.rename, { ...ids, path: 'a.txt', new_path: 'd' })).code, status.ALREADY_EXISTS);
  t.is((await f.rpc(S.rmDir, { ...ids, path: 'd' })).code, status.FAILED_PRECONDITION, 'not empty');
  t.is((await f.rpc(S.remove, { ...ids, path: 'd' })).code, status.FAILED_PRECONDITION, 'a directory');
  t.is((await f.rpc(S.readDir, { ...ids, path: 'a.txt', offset: 0, limit: 0 })).code, status.FAILED_PRECONDITION, 'not a directory');
  t.is((await f.rpc(S.create, { ...ids, path: 'a.txt/x', mode: 0, exclusive: true })).code, status.FAILED_PRECONDITION, 'parent is a file');
  // A non-exclusive create truncates an existing file.
  await f.rpc(S.write, { ...ids, path: 'a.txt', offset: 0, data: Buffer.from('abc') });
  const trunc = await f.rpc(S.create, { ...ids, path: 'a.txt', mode: 0, exclusive: false });
  t.is(trunc.code, status.OK);
  t.is(trunc.messages[0]!.attributes!.size, 0);
});

test("the manifest's filesystem policy: writes outside spec.security.filesystem.write are PERMISSION_DENIED", async (t) => {
  const { ids } = await setup({ filesystem: { read: ['/workspace/**'], write: ['/workspace/out/**'] } });
  const mkOut = await f.rpc(S.mkDir, { ...ids, path: 'out', mode: 0 });
  t.is(mkOut.code, status.OK, mkOut.details);
  t.is((await f.rpc(S.create, { ...ids, path: 'out/r.txt', mode: 0, exclusive: true })).code, status.OK);
  const outside = await f.rpc(S.create, { ...ids, path: 'notes.txt', mode: 0, exclusive: true });
  t.is(outside.code, status.PERMISSION_DENIED);
  t.regex(outside.details, /write allowlist/);
  const readOnlyPolicy = await setup({ filesystem: { read: ['/workspace/src/**'], write: ['/workspace/src/**'] } });
  await f.volumes.writeFile(TENANT, readOnlyPolicy.vol, '/secret.txt', 's');
  await f.volumes.writeFile(TENANT, readOnlyPolicy.vol, '/src/ok.txt', 'o');
  const secret = await f.rpc(S.read, { ...readOnlyPolicy.ids, path: 'secret.txt', offset: 0, length: 10 });
  t.is(secret.code, status.PERMISSION_DENIED);
  // The directories above an allowed glob can be looked up (the kernel must walk them), not read.
  t.is((await f.rpc(S.getAttr, { ...readOnlyPolicy.ids, path: '' })).code, status.OK);
  const okRead = await f.rpc(S.read, { ...readOnlyPolicy.ids, path: 'src/ok.txt', offset: 0, length: 10 });
  t.is(okRead.code, status.OK, okRead.details);
});

test('one StorageEvent row per operation (allowed and refused), published on storage:<volume_id> and listed by the logs query', async (t) => {
  const { exec, vol, ids } = await setup({ limit: 10 });
  const seen: StorageEvent[] = [];
  const sub = await f.bus.subscribe(storageStream(vol), (e) => seen.push(e.payload as StorageEvent));
  const calls: [Rpc, unknown][] = [
    ['mkDir', { ...ids, path: 'd', mode: 0 }],
    ['create', { ...ids, path: 'd/f', mode: 0, exclusive: true }],
    ['write', { ...ids, path: 'd/f', offset: 0, data: Buffer.from('12345') }],
    ['write', { ...ids, path: 'd/f', offset: 5, data: Buffer.from('too much data') }],
    ['read', { ...ids, path: 'd/f', offset: 0, length: 3 }],
    ['lookup', { ...ids, path: 'd/f' }],
    ['getAttr', { ...ids, path: 'missing' }],
    ['readDir', { ...ids, path: 'd', offset: 0, limit: 0 }],
    ['rename', { ...ids, path: 'd/f', new_path: 'd/g' }],
    ['remove', { ...ids, path: 'd/g' }],
    ['rmDir', { ...ids, path: 'd' }],
  ];
  for (const [rpc, req] of calls) await f.rpc(method(rpc), req);
  // Every answered call's StorageEvent is committed before its answer (group commit): no flush needed.
  const rows = await f.db.query<{ operation: string; status: string; bytes: string; path: string; new_path: string | null; seq: number }>(
    'SELECT operation, status, bytes, path, new_path, seq FROM storage_events WHERE volume_id = $1 ORDER BY seq',
    [vol],
  );
  t.deepEqual(
    rows.rows.map((r) => [r.operation, r.status, Number(r.bytes)]),
    [
      ['mkdir', 'OK', 0],
      ['create', 'OK', 0],
      ['write', 'OK', 5],
      ['write', 'RESOURCE_EXHAUSTED', 0],
      ['read', 'OK', 3],
      ['lookup', 'OK', 0],
      ['getattr', 'NOT_FOUND', 0],
      ['readdir', 'OK', 0],
      ['rename', 'OK', 0],
      ['remove', 'OK', 5],
      ['rmdir', 'OK', 0],
    ],
  );
  t.deepEqual(rows.rows.map((r) => r.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  t.is(rows.rows[8]!.new_path, '/d/g');
  // Publishing on the bus follows the commit (and the answer): wait for it.
  await f.fsal.flushEvents();
  t.is(seen.length, calls.length, 'each event was published on the bus');
  t.deepEqual(seen.map((e) => e.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  const logs = await listStorageEvents(f.db, TENANT, { execution_id: exec, limit: 100 });
  t.is(logs.count, calls.length);
  t.is(logs.events[3]!.error?.includes('ENOSPC') ?? false, true);
  t.is((await listStorageEvents(f.db, 'globex', { execution_id: exec })).count, 0, 'tenant-scoped');
  await sub.close();
});

test('16 writers racing on one volume never exceed its quota and never corrupt a file', async (t) => {
  const limit = 16 * 1024;
  const { vol, ids } = await setup({ limit });
  const chunk = 1024;
  const writers = Array.from({ length: 16 }, (_, i) => i);
  for (const i of writers) await f.rpc(S.create, { ...ids, path: `w${i}.bin`, mode: 0, exclusive: true });
  // Each writer wants 2 KiB in two writes: 32 KiB asked for, 16 KiB allowed.
  const results = await Promise.all(
    writers.map(async (i) => {
      const codes: status[] = [];
      for (let k = 0; k < 2; k++) {
        const out = await f.rpc(S.write, { ...ids, path: `w${i}.bin`, offset: k * chunk, data: Buffer.alloc(chunk, i + 1) });
        codes.push(out.code);
        if (out.code !== status.OK) break;
      }
      return codes;
    }),
  );
  const okWrites = results.flat().filter((c) => c === status.OK).length;
  const refused = results.flat().filter((c) => c === status.RESOURCE_EXHAUSTED).length;
  t.is(okWrites, limit / chunk, 'exactly as many writes as fit');
  t.true(refused > 0);
  t.deepEqual(results.flat().filter((c) => c !== status.OK && c !== status.RESOURCE_EXHAUSTED), []);
  const q = await f.volumes.quota(TENANT, vol);
  t.is(q.used_bytes, limit);
  const host = await f.volumes.hostPath(TENANT, vol);
  let total = 0;
  for (const i of writers) {
    const data = await readFile(path.join(host, `w${i}.bin`));
    total += data.length;
    t.true(data.every((b) => b === i + 1), `w${i}.bin holds only its writer's bytes`);
  }
  t.is(total, limit, 'the disk agrees with used_bytes');
});
