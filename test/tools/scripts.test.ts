// Script tools (seed 001): orch.script.save/list/get/update/delete through the real catalog on a real PGlite
// database opened by openDb (which applies the migrations, 005_scripts among them).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { openDb } from '../../src/storage/open.ts';
import { createToolCatalog, type NodeToolCatalog } from '../../src/tools/catalog.ts';
import { nodeContexts } from '../../src/tools/policy.ts';
import type { ToolCallContext, ToolOutcome } from '../../src/tools/types.ts';
import { callContext, nodeConfig, principal } from './helpers.ts';

let db: Db;
let dir: string;
let catalog: NodeToolCatalog;

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'orch-scripts-'));
  db = await openDb({ dataDir: dir }, silentLogger());
  catalog = createToolCatalog({ config: nodeConfig(), logger: silentLogger(), db });
});

test.after.always(async () => {
  await db?.close();
  await rm(dir, { recursive: true, force: true });
});

const system = nodeContexts['orch-system-agent-runtime']!;
const as = (tenant: string, subject = 'alice'): ToolCallContext => {
  const p = principal([], tenant, subject);
  return callContext({ ...system }, { principal: p, tenantId: p.tenantId });
};

type R = Record<string, unknown>;
const result = (o: ToolOutcome): R => {
  if (!o.ok) throw new Error(`tool failed: ${o.error.error}: ${o.error.message}`);
  return o.result as R;
};
const names = (o: ToolOutcome): string[] => (result(o).scripts as { name: string }[]).map((s) => s.name);

test('skip_judge follows the seed table; without a db the tools are not registered', (t) => {
  t.is(catalog.skipJudge('orch.script.save'), false);
  t.is(catalog.skipJudge('orch.script.update'), false);
  t.is(catalog.skipJudge('orch.script.delete'), false);
  t.is(catalog.skipJudge('orch.script.list'), true);
  t.is(catalog.skipJudge('orch.script.get'), true);
  const bare = createToolCatalog({ config: nodeConfig(), logger: silentLogger() });
  t.is(bare.get('orch.script.save'), undefined);
});

test('save → get → update → list filters → delete', async (t) => {
  const ctx = as('t-life', 'alice');
  const saved = result(
    await catalog.call(ctx, 'orch.script.save', { name: 'hello', code: 'console.log("v1");', tags: ['demo', 'ts'], description: 'Says hello' }),
  );
  t.is(saved.version, 1);
  t.is(saved.owner, 'alice');
  const id = saved.id as string;
  result(await catalog.call(ctx, 'orch.script.save', { name: 'other', code: 'export {};', tags: ['misc'] }));

  const got = result(await catalog.call(ctx, 'orch.script.get', { id }));
  t.like(got, { id, name: 'hello', version: 1, code: 'console.log("v1");', tags: ['demo', 'ts'], description: 'Says hello' });
  t.is((got.versions as unknown[]).length, 1);

  const upd = result(await catalog.call(as('t-life', 'bob'), 'orch.script.update', { id, name: 'hello', code: 'console.log("v2");' }));
  t.is(upd.version, 2);
  t.is(upd.owner, 'alice');
  t.deepEqual(upd.tags, ['demo', 'ts']);
  const got2 = result(await catalog.call(ctx, 'orch.script.get', { id }));
  t.is(got2.version, 2);
  t.is(got2.code, 'console.log("v2");');
  const versions = got2.versions as { version: number; code: string; created_by: string }[];
  t.deepEqual(
    versions.map((v) => [v.version, v.code, v.created_by]),
    [
      [2, 'console.log("v2");', 'bob'],
      [1, 'console.log("v1");', 'alice'],
    ],
  );

  t.deepEqual(names(await catalog.call(ctx, 'orch.script.list', {})), ['hello', 'other']);
  t.deepEqual(names(await catalog.call(ctx, 'orch.script.list', { tag: 'demo' })), ['hello']);
  t.deepEqual(names(await catalog.call(ctx, 'orch.script.list', { tag: 'nope' })), []);
  t.deepEqual(names(await catalog.call(ctx, 'orch.script.list', { q: 'OTH' })), ['other']);
  t.deepEqual(names(await catalog.call(ctx, 'orch.script.list', { q: 'says' })), ['hello']);
  t.deepEqual(names(await catalog.call(ctx, 'orch.script.list', { tag: 'ts', q: 'hel' })), ['hello']);

  t.like(result(await catalog.call(ctx, 'orch.script.delete', { id })), { id, deleted: true });
  t.like(await catalog.call(ctx, 'orch.script.get', { id }), { ok: false, error: { error: 'NOT_FOUND' } });
  t.deepEqual(names(await catalog.call(ctx, 'orch.script.list', {})), ['other']);
  t.like(await catalog.call(ctx, 'orch.script.delete', { id }), { ok: false, error: { error: 'NOT_FOUND' } });
  t.like(await catalog.call(ctx, 'orch.script.update', { id, name: 'hello', code: 'x' }), { ok: false, error: { error: 'NOT_FOUND' } });

  // A deleted name may be reused.
  const again = result(await catalog.call(ctx, 'orch.script.save', { name: 'hello', code: 'console.log("new");' }));
  t.not(again.id, id);
  t.is(again.version, 1);
});

test('a duplicate name is ALREADY_EXISTS, on save and on a rename', async (t) => {
  const ctx = as('t-dup');
  result(await catalog.call(ctx, 'orch.script.save', { name: 'dup', code: '1;' }));
  const second = await catalog.call(ctx, 'orch.script.save', { name: 'dup', code: '2;' });
  t.like(second, { ok: false, error: { error: 'ALREADY_EXISTS' } });
  const b = result(await catalog.call(ctx, 'orch.script.save', { name: 'b', code: '3;' }));
  t.like(await catalog.call(ctx, 'orch.script.update', { id: b.id, name: 'dup', code: '4;' }), { ok: false, error: { error: 'ALREADY_EXISTS' } });
  // The same name in another tenant is fine.
  t.true((await catalog.call(as('t-dup-2'), 'orch.script.save', { name: 'dup', code: '1;' })).ok);
});

test('tenant isolation: another tenant cannot get, list, update or delete a script', async (t) => {
  const saved = result(await catalog.call(as('t-iso-a'), 'orch.script.save', { name: 'secret', code: 'secret();' }));
  const other = as('t-iso-b');
  t.like(await catalog.call(other, 'orch.script.get', { id: saved.id }), { ok: false, error: { error: 'NOT_FOUND' } });
  t.deepEqual(names(await catalog.call(other, 'orch.script.list', {})), []);
  t.like(await catalog.call(other, 'orch.script.update', { id: saved.id, name: 'x', code: 'x' }), { ok: false, error: { error: 'NOT_FOUND' } });
  t.like(await catalog.call(other, 'orch.script.delete', { id: saved.id }), { ok: false, error: { error: 'NOT_FOUND' } });
  t.is(result(await catalog.call(as('t-iso-a'), 'orch.script.get', { id: saved.id })).version, 1);
});

test('bad arguments are InvalidArguments naming the field; a malformed id is NOT_FOUND', async (t) => {
  const ctx = as('t-args');
  const missing = await catalog.call(ctx, 'orch.script.save', { name: 'x' });
  t.like(missing, { ok: false, error: { error: 'InvalidArguments' } });
  t.regex(missing.ok ? '' : missing.error.message, /"code"/);
  for (const [args, field] of [
    [{ name: 'x', code: 42 }, 'code'],
    [{ name: 7, code: 'x' }, 'name'],
    [{ name: '~x', code: 'x' }, 'name'],
    [{ name: 'x', code: 'x', tags: 'demo' }, 'tags'],
    [{ name: 'x', code: 'x', tags: [1] }, 'tags'],
    [{ name: 'x', code: 'x', description: 5 }, 'description'],
  ] as const) {
    const r = await catalog.call(ctx, 'orch.script.save', args as Record<string, unknown>);
    t.like(r, { ok: false, error: { error: 'InvalidArguments' } }, JSON.stringify(args));
    t.regex(r.ok ? '' : r.error.message, new RegExp(`"${field}"`));
  }
  t.like(await catalog.call(ctx, 'orch.script.get', { id: 5 }), { ok: false, error: { error: 'InvalidArguments' } });
  t.like(await catalog.call(ctx, 'orch.script.list', { tag: 5 }), { ok: false, error: { error: 'InvalidArguments' } });
  t.like(await catalog.call(ctx, 'orch.script.get', { id: 'not-a-uuid' }), { ok: false, error: { error: 'NOT_FOUND' } });
  t.deepEqual(names(await catalog.call(ctx, 'orch.script.list', {})), []);
});
