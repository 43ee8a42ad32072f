// orch.volume.* and orch.file.* through the node's real tool catalog on real PostgreSQL: results, argument errors,
// StorageFull, PathOutsideBoundary, tenant scoping, skip_judge and the external context.
import test from 'ava';
import { silentLogger } from '../../src/logging/logger.ts';
import { createToolCatalog, type NodeToolCatalog } from '../../src/tools/catalog.ts';
import { nodeContexts } from '../../src/tools/policy.ts';
import type { ToolCallContext, ToolOutcome } from '../../src/tools/types.ts';
import { treeSize } from '../../src/volumes/disk.ts';
import { callContext, nodeConfig, principal } from '../tools/helpers.ts';
import { volumeFixture, type VolumeFixture } from './support.ts';

let fx: VolumeFixture;
let catalog: NodeToolCatalog;

test.before(async () => {
  fx = await volumeFixture('pg');
  catalog = createToolCatalog({ config: nodeConfig(), logger: silentLogger(), db: fx.db, volumes: fx.volumes });
});

test.after.always(async () => {
  await fx?.close();
});

const as = (tenant: string, subject = 'alice', context = nodeContexts['orch-system-agent-runtime']!): ToolCallContext => {
  const p = principal([], tenant, subject);
  return callContext({ ...context }, { principal: p, tenantId: p.tenantId });
};

type R = Record<string, unknown>;
const result = (o: ToolOutcome): R => {
  if (!o.ok) throw new Error(`tool failed: ${o.error.error}: ${o.error.message}`);
  return o.result as R;
};
const failure = (o: ToolOutcome): { error: string; message: string } => {
  if (o.ok) throw new Error(`expected a failure, got ${JSON.stringify(o.result)}`);
  return o.error;
};

test('registered with the seed skip_judge defaults; absent without the service', (t) => {
  for (const n of ['orch.volume.create', 'orch.volume.delete', 'orch.file.write', 'orch.file.delete', 'orch.file.mkdir']) t.is(catalog.skipJudge(n), false, n);
  for (const n of ['orch.volume.list', 'orch.volume.quota', 'orch.file.list', 'orch.file.read']) t.is(catalog.skipJudge(n), true, n);
  t.deepEqual(catalog.get('orch.volume.create')?.required, ['label', 'size_limit_bytes']);
  t.deepEqual(catalog.get('orch.file.write')?.required, ['volume_id', 'path', 'content']);
  const bare = createToolCatalog({ config: nodeConfig(), logger: silentLogger() });
  t.is(bare.get('orch.volume.create'), undefined);
});

test('create → file write/read/list/mkdir/delete → quota → delete', async (t) => {
  const ctx = as('t-tools');
  const v = result(await catalog.call(ctx, 'orch.volume.create', { label: 'work', size_limit_bytes: 1000 }));
  t.like(v, { label: 'work', size_limit_bytes: 1000, used_bytes: 0, owner_subject: 'alice', tenant_id: 't-tools', storage_class: 'persistent' });
  const id = v.id as string;
  t.true((result(await catalog.call(ctx, 'orch.volume.list', {})).volumes as { id: string }[]).some((x) => x.id === id));

  t.like(result(await catalog.call(ctx, 'orch.file.write', { volume_id: id, path: '/src/main.py', content: 'print("hi")\n' })), { path: '/src/main.py', bytes_written: 12, used_bytes: 12 });
  t.like(result(await catalog.call(ctx, 'orch.file.read', { volume_id: id, path: 'src/main.py' })), { content: 'print("hi")\n', encoding: 'utf8', bytes: 12 });
  t.like(result(await catalog.call(ctx, 'orch.file.read', { volume_id: id, path: 'src/main.py', offset: 6, length: 4 })), { content: '"hi"' });
  // Binary content round-trips through base64.
  const bin = Buffer.from([0, 1, 2, 250, 255]);
  result(await catalog.call(ctx, 'orch.file.write', { volume_id: id, path: 'b.bin', content: bin.toString('base64'), encoding: 'base64' }));
  t.is(result(await catalog.call(ctx, 'orch.file.read', { volume_id: id, path: 'b.bin', encoding: 'base64' })).content, bin.toString('base64'));

  t.like(result(await catalog.call(ctx, 'orch.file.mkdir', { volume_id: id, path: 'out/logs' })), { path: '/out/logs', type: 'directory' });
  const listing = result(await catalog.call(ctx, 'orch.file.list', { volume_id: id, path: '/' }));
  t.deepEqual((listing.entries as { name: string }[]).map((e) => e.name), ['b.bin', 'out', 'src']);

  t.is(failure(await catalog.call(ctx, 'orch.file.delete', { volume_id: id, path: 'src' })).error, 'DirectoryNotEmpty');
  t.is(failure(await catalog.call(ctx, 'orch.file.read', { volume_id: id, path: 'src' })).error, 'IsADirectory');
  t.is(failure(await catalog.call(ctx, 'orch.file.list', { volume_id: id, path: 'src/main.py' })).error, 'NotADirectory');
  t.is(failure(await catalog.call(ctx, 'orch.file.mkdir', { volume_id: id, path: 'src/main.py' })).error, 'ALREADY_EXISTS');
  t.like(result(await catalog.call(ctx, 'orch.file.delete', { volume_id: id, path: 'src', recursive: true })), { path: '/src', freed_bytes: 12 });
  t.is(failure(await catalog.call(ctx, 'orch.file.read', { volume_id: id, path: 'src/main.py' })).error, 'NOT_FOUND');

  const quota = result(await catalog.call(ctx, 'orch.volume.quota', { volume_id: id }));
  t.like(quota, { volume_id: id, size_limit_bytes: 1000, used_bytes: 5, available_bytes: 995, file_count: 1 });
  t.is(quota.used_bytes, (await treeSize(await fx.volumes.hostPath('t-tools', id))).bytes);
  const all = result(await catalog.call(ctx, 'orch.volume.quota', {}));
  t.true((all.quotas as { volume_id: string; label: string }[]).some((x) => x.volume_id === id && x.label === 'work'));

  t.deepEqual(result(await catalog.call(ctx, 'orch.volume.delete', { volume_id: id })), { deleted: true, volume_id: id });
  t.is(failure(await catalog.call(ctx, 'orch.volume.quota', { volume_id: id })).error, 'NOT_FOUND');
  t.is(failure(await catalog.call(ctx, 'orch.volume.delete', { volume_id: id })).error, 'NOT_FOUND');
});

test('argument errors are InvalidArguments naming the field', async (t) => {
  const ctx = as('t-args');
  const miss = failure(await catalog.call(ctx, 'orch.volume.create', { label: 'x' }));
  t.is(miss.error, 'InvalidArguments');
  t.regex(miss.message, /size_limit_bytes/);
  t.is(failure(await catalog.call(ctx, 'orch.volume.create', { label: 'x', size_limit_bytes: 0 })).error, 'InvalidArguments');
  t.is(failure(await catalog.call(ctx, 'orch.volume.create', { label: 'x', size_limit_bytes: '100' })).error, 'InvalidArguments');
  t.is(failure(await catalog.call(ctx, 'orch.volume.create', { label: 'x', size_limit_bytes: 10, storage_class: 'cold' })).error, 'InvalidArguments');
  t.is(failure(await catalog.call(ctx, 'orch.volume.create', { label: '', size_limit_bytes: 10 })).error, 'InvalidArguments');
  const id = result(await catalog.call(ctx, 'orch.volume.create', { label: 'x', size_limit_bytes: 10 })).id as string;
  t.regex(failure(await catalog.call(ctx, 'orch.file.write', { volume_id: id, path: 'a' })).message, /content/);
  t.is(failure(await catalog.call(ctx, 'orch.file.write', { volume_id: id, path: 'a', content: 5 })).error, 'InvalidArguments');
  t.is(failure(await catalog.call(ctx, 'orch.file.write', { volume_id: id, path: 'a', content: '%%', encoding: 'base64' })).error, 'InvalidArguments');
  t.is(failure(await catalog.call(ctx, 'orch.file.read', { volume_id: id, path: 'a', encoding: 'latin9' })).error, 'InvalidArguments');
  t.is(failure(await catalog.call(ctx, 'orch.file.read', { volume_id: id, path: 'a', offset: -1 })).error, 'InvalidArguments');
  t.is(failure(await catalog.call(ctx, 'orch.file.delete', { volume_id: id, path: 'a', recursive: 'yes' })).error, 'InvalidArguments');
  t.is(failure(await catalog.call(ctx, 'orch.file.list', { volume_id: 'nope', path: '/' })).error, 'NOT_FOUND');
});

test('StorageFull when the volume has no room (nothing written); PathOutsideBoundary for escapes', async (t) => {
  const ctx = as('t-full');
  const id = result(await catalog.call(ctx, 'orch.volume.create', { label: 'tiny', size_limit_bytes: 10 })).id as string;
  result(await catalog.call(ctx, 'orch.file.write', { volume_id: id, path: 'a.txt', content: '1234567' }));
  const full = failure(await catalog.call(ctx, 'orch.file.write', { volume_id: id, path: 'b.txt', content: '1234' }));
  t.is(full.error, 'StorageFull');
  t.regex(full.message, /ENOSPC/);
  t.is(failure(await catalog.call(ctx, 'orch.file.read', { volume_id: id, path: 'b.txt' })).error, 'NOT_FOUND');
  const esc = failure(await catalog.call(ctx, 'orch.file.write', { volume_id: id, path: '../../etc/passwd', content: 'x' }));
  t.is(esc.error, 'PathOutsideBoundary');
  t.is(failure(await catalog.call(ctx, 'orch.file.read', { volume_id: id, path: '../a.txt' })).error, 'PathOutsideBoundary');
  t.is(failure(await catalog.call(ctx, 'orch.file.list', { volume_id: id, path: '/..' })).error, 'PathOutsideBoundary');
  t.is((await fx.volumes.get('t-full', id)).used_bytes, 7);
});

test('tenants are separate; the external context may list and read but not write', async (t) => {
  const mine = as('t-a');
  const id = result(await catalog.call(mine, 'orch.volume.create', { label: 'a', size_limit_bytes: 100 })).id as string;
  result(await catalog.call(mine, 'orch.file.write', { volume_id: id, path: 'f', content: 'mine' }));
  const theirs = as('t-b', 'bob');
  t.false((result(await catalog.call(theirs, 'orch.volume.list', {})).volumes as { id: string }[]).some((v) => v.id === id));
  t.is(failure(await catalog.call(theirs, 'orch.file.read', { volume_id: id, path: 'f' })).error, 'NOT_FOUND');
  t.is(failure(await catalog.call(theirs, 'orch.file.write', { volume_id: id, path: 'f', content: 'theirs' })).error, 'NOT_FOUND');
  t.is(failure(await catalog.call(theirs, 'orch.volume.delete', { volume_id: id })).error, 'NOT_FOUND');

  const external = as('t-a', 'carol', nodeContexts['orch-external-default']!);
  t.is(result(await catalog.call(external, 'orch.file.read', { volume_id: id, path: 'f' })).content, 'mine');
  t.true((result(await catalog.call(external, 'orch.volume.list', {})).volumes as { id: string }[]).some((v) => v.id === id));
  t.is(failure(await catalog.call(external, 'orch.file.write', { volume_id: id, path: 'f', content: 'x' })).error, 'ToolNotAllowed');
  t.is(failure(await catalog.call(external, 'orch.volume.create', { label: 'x', size_limit_bytes: 1 })).error, 'ToolNotAllowed');
  t.is(result(await catalog.call(mine, 'orch.file.read', { volume_id: id, path: 'f' })).content, 'mine');
});
