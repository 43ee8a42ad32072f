// fs.* tools on a volume-backed mount (an execution's spec.volumes volume): they act through the VolumeService, so
// the quota applies (StorageFull, nothing half-written), symlink escapes are refused, read-only mounts refuse
// writes, and each call that reaches the volume leaves a StorageEvent, as an FSAL call does. Real PostgreSQL, a real
// VolumeService and the node's tool catalog.
import test from 'ava';
import { symlink } from 'node:fs/promises';
import path from 'node:path';
import { listStorageEvents } from '../../src/fsal/events.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { createToolCatalog } from '../../src/tools/catalog.ts';
import type { ToolCallContext, VolumeMount } from '../../src/tools/types.ts';
import { fsalFixture, TENANT, type FsalFixture } from '../fsal/support.ts';
import { callContext, context, nodeConfig, principal } from '../tools/helpers.ts';

let f: FsalFixture;
test.before(async () => {
  f = await fsalFixture();
});
test.after.always(async () => {
  await f?.close();
});

async function setup(o: { limit?: number; readOnly?: boolean } = {}): Promise<{ exec: string; vol: string; ctx: ToolCallContext; catalog: ReturnType<typeof createToolCatalog> }> {
  const exec = await f.execution();
  const vol = await f.volume({ limit: o.limit ?? 1000, owner: exec });
  // A host path that is NOT the volume's directory: a tool that bypassed the VolumeService would fail or miss.
  const mounts: VolumeMount[] = [{ sandboxPath: '/data', hostPath: path.join(f.dataDir, 'not-the-volume'), readOnly: o.readOnly ?? false, volumeId: vol }];
  const catalog = createToolCatalog({ config: nodeConfig(), logger: silentLogger(), db: f.db, bus: f.bus, volumes: f.volumes });
  const p = { ...principal(), tenantId: TENANT, homeTenantId: TENANT };
  const ctx = callContext(context(), { origin: 'inner_loop', principal: p, tenantId: TENANT, mounts, workdir: '/data', executionId: exec });
  return { exec, vol, ctx, catalog };
}

test('write, read, list, create_dir, edit, multi_edit, delete go through the VolumeService with exact quota', async (t) => {
  const { exec, vol, ctx, catalog } = await setup();
  t.like(await catalog.call(ctx, 'fs.write', { path: 'src/a.txt', content: 'hello' }), { ok: true, result: 'wrote 5 bytes to /data/src/a.txt' });
  t.is(String(await f.volumes.readFile(TENANT, vol, '/src/a.txt')), 'hello');
  t.is((await f.volumes.quota(TENANT, vol)).used_bytes, 5);
  t.like(await catalog.call(ctx, 'fs.read', { path: '/data/src/a.txt' }), { ok: true, result: 'hello' });
  t.like(await catalog.call(ctx, 'fs.create_dir', { path: 'd/e' }), { ok: true, result: 'created /data/d/e' });
  t.like(await catalog.call(ctx, 'fs.create_dir', { path: 'd/e' }), { ok: true }, 'an existing directory is success');
  t.like(await catalog.call(ctx, 'fs.list', {}), { ok: true, result: 'd/\nsrc/' });
  t.like(await catalog.call(ctx, 'fs.edit', { path: 'src/a.txt', target_content: 'hello', replacement_content: 'hello world' }), { ok: true });
  t.like(await catalog.call(ctx, 'fs.multi_edit', { path: 'src/a.txt', edits: [{ target_content: 'world', replacement_content: 'there' }] }), { ok: true });
  t.is(String(await f.volumes.readFile(TENANT, vol, '/src/a.txt')), 'hello there');
  t.is((await f.volumes.quota(TENANT, vol)).used_bytes, 11);
  t.like(await catalog.call(ctx, 'fs.edit', { path: 'src/a.txt', target_content: 'nope', replacement_content: 'x' }), { ok: false, error: { error: 'EditFailed' } });
  t.like(await catalog.call(ctx, 'fs.read', { path: 'missing.txt' }), { ok: false, error: { error: 'NOT_FOUND' } });
  t.like(await catalog.call(ctx, 'fs.delete', { path: 'src' }), { ok: false, error: { error: 'DirectoryNotEmpty' } });
  t.like(await catalog.call(ctx, 'fs.delete', { path: 'src', recursive: true }), { ok: true, result: 'deleted /data/src' });
  t.like(await catalog.call(ctx, 'fs.delete', { path: '/data' }), { ok: false, error: { error: 'PERMISSION_DENIED' } });
  t.is((await f.volumes.quota(TENANT, vol)).used_bytes, 0);

  const { events } = await listStorageEvents(f.db, TENANT, { execution_id: exec, limit: 100 });
  const seen = events.map((e) => `${e.operation} ${e.path} ${e.status}`);
  for (const want of ['write /src/a.txt OK', 'read /src/a.txt OK', 'mkdir /d/e OK', 'readdir / OK', 'read /missing.txt NOT_FOUND', 'remove /src FAILED_PRECONDITION', 'remove /src OK']) {
    t.true(seen.includes(want), `${want} in\n${seen.join('\n')}`);
  }
  t.is(events.find((e) => e.operation === 'write')?.bytes, 5);
});

test('a write over the quota is StorageFull, leaves the old file whole, and records RESOURCE_EXHAUSTED', async (t) => {
  const { exec, vol, ctx, catalog } = await setup({ limit: 10 });
  t.like(await catalog.call(ctx, 'fs.write', { path: 'a.txt', content: 'old' }), { ok: true });
  t.like(await catalog.call(ctx, 'fs.write', { path: 'a.txt', content: 'x'.repeat(11) }), { ok: false, error: { error: 'StorageFull' } });
  t.like(await catalog.call(ctx, 'fs.edit', { path: 'a.txt', target_content: 'old', replacement_content: 'y'.repeat(20) }), { ok: false, error: { error: 'StorageFull' } });
  t.is(String(await f.volumes.readFile(TENANT, vol, '/a.txt')), 'old');
  t.is((await f.volumes.quota(TENANT, vol)).used_bytes, 3);
  const { events } = await listStorageEvents(f.db, TENANT, { execution_id: exec, operation: 'write', limit: 100 });
  t.deepEqual(
    events.map((e) => e.status),
    ['OK', 'RESOURCE_EXHAUSTED', 'RESOURCE_EXHAUSTED'],
  );
});

test('read-only mounts refuse writes; symlink and .. escapes are PathOutsideBoundary', async (t) => {
  const ro = await setup({ readOnly: true });
  t.like(await ro.catalog.call(ro.ctx, 'fs.write', { path: 'a.txt', content: 'x' }), { ok: false, error: { error: 'PERMISSION_DENIED' } });
  t.deepEqual(await f.volumes.listDir(TENANT, ro.vol, '/'), []);

  const { vol, ctx, catalog } = await setup();
  await symlink('/etc', path.join(await f.volumes.hostPath(TENANT, vol), 'etc-link'));
  t.like(await catalog.call(ctx, 'fs.read', { path: 'etc-link/hostname' }), { ok: false, error: { error: 'PathOutsideBoundary' } });
  t.like(await catalog.call(ctx, 'fs.write', { path: 'etc-link/evil', content: 'x' }), { ok: false, error: { error: 'PathOutsideBoundary' } });
  t.like(await catalog.call(ctx, 'fs.read', { path: '../../etc/passwd' }), { ok: false, error: { error: 'PathOutsideBoundary' } });
});
