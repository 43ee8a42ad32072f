// The ten fs tools on a real temp directory mounted at /workspace: read, write, list, create_dir, delete (recursive),
// edit (exactly one match), multi_edit (atomic), grep, glob; `../` and symlink escapes are PathOutsideBoundary.
import test from 'ava';
import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { createToolCatalog } from '../../src/tools/catalog.ts';
import type { ToolCallContext } from '../../src/tools/types.ts';
import { callContext, context, nodeConfig, volume } from './helpers.ts';

const catalog = createToolCatalog({ config: nodeConfig(), logger: silentLogger() });

async function setup(t: import('ava').ExecutionContext): Promise<{ host: string; ctx: ToolCallContext }> {
  const { host, mounts } = await volume(t);
  return { host, ctx: callContext(context(), { origin: 'inner_loop', mounts, workdir: '/workspace' }) };
}

test('write, read, list, create_dir', async (t) => {
  const { host, ctx } = await setup(t);
  t.like(await catalog.call(ctx, 'fs.write', { path: 'src/a.txt', content: 'hello' }), { ok: true, result: 'wrote 5 bytes to /workspace/src/a.txt' });
  t.is(await readFile(path.join(host, 'src/a.txt'), 'utf8'), 'hello');
  t.like(await catalog.call(ctx, 'fs.read', { path: '/workspace/src/a.txt' }), { ok: true, result: 'hello' });
  t.like(await catalog.call(ctx, 'fs.create_dir', { path: 'd/e/f' }), { ok: true });
  t.like(await catalog.call(ctx, 'fs.create_dir', { path: 'd/e/f' }), { ok: true }, 'an existing directory is success');
  t.true((await stat(path.join(host, 'd/e/f'))).isDirectory());
  t.like(await catalog.call(ctx, 'fs.list', { path: '/workspace' }), { ok: true, result: 'd/\nsrc/' });
  t.like(await catalog.call(ctx, 'fs.list', {}), { ok: true, result: 'd/\nsrc/' }, 'no path: the workspace');
  t.like(await catalog.call(ctx, 'fs.read', { path: 'missing.txt' }), { ok: false, error: { error: 'NOT_FOUND' } });
  t.like(await catalog.call(ctx, 'fs.list', { path: 'nope' }), { ok: false, error: { error: 'NOT_FOUND' } });
});

test('delete: files, empty directories, non-empty ones only with recursive', async (t) => {
  const { host, ctx } = await setup(t);
  await mkdir(path.join(host, 'full/sub'), { recursive: true });
  await writeFile(path.join(host, 'full/sub/x'), 'x');
  await writeFile(path.join(host, 'f.txt'), 'x');
  await mkdir(path.join(host, 'empty'));
  t.like(await catalog.call(ctx, 'fs.delete', { path: 'f.txt' }), { ok: true });
  t.like(await catalog.call(ctx, 'fs.delete', { path: 'empty' }), { ok: true });
  t.like(await catalog.call(ctx, 'fs.delete', { path: 'full' }), { ok: false, error: { error: 'DirectoryNotEmpty' } });
  t.like(await catalog.call(ctx, 'fs.delete', { path: 'full', recursive: true }), { ok: true });
  t.like(await catalog.call(ctx, 'fs.delete', { path: 'gone' }), { ok: false, error: { error: 'NOT_FOUND' } });
  t.like(await catalog.call(ctx, 'fs.delete', { path: '/workspace', recursive: true }), { ok: false, error: { error: 'PERMISSION_DENIED' } });
  const denied = callContext(context({ deny: ['fs.delete'] }), { mounts: ctx.mounts!, workdir: '/workspace' });
  t.like(await catalog.call(denied, 'fs.delete', { path: 'x' }), { ok: false, error: { error: 'ToolNotAllowed' } });
});

test('edit replaces exactly one match', async (t) => {
  const { host, ctx } = await setup(t);
  await writeFile(path.join(host, 'a.txt'), 'one two two');
  t.like(await catalog.call(ctx, 'fs.edit', { path: 'a.txt', target_content: 'two', replacement_content: '2' }), { ok: false, error: { error: 'EditFailed' } });
  t.like(await catalog.call(ctx, 'fs.edit', { path: 'a.txt', target_content: 'three', replacement_content: '3' }), { ok: false, error: { error: 'EditFailed' } });
  t.like(await catalog.call(ctx, 'fs.edit', { path: 'a.txt', target_content: 'one', replacement_content: '$&1' }), { ok: true });
  t.is(await readFile(path.join(host, 'a.txt'), 'utf8'), '$&1 two two');
  t.like(await catalog.call(ctx, 'fs.edit', { path: 'nope.txt', target_content: 'a', replacement_content: 'b' }), { ok: false, error: { error: 'NOT_FOUND' } });
});

test('multi_edit applies edits in order, and a failing edit leaves the file unchanged', async (t) => {
  const { host, ctx } = await setup(t);
  const file = path.join(host, 'm.txt');
  await writeFile(file, 'alpha beta gamma');
  const good = await catalog.call(ctx, 'fs.multi_edit', {
    path: 'm.txt',
    edits: [
      { target_content: 'alpha', replacement_content: 'ALPHA' },
      { target_content: 'ALPHA beta', replacement_content: 'AB' },
    ],
  });
  t.like(good, { ok: true, result: 'edited /workspace/m.txt: 2 replacement(s)' });
  t.is(await readFile(file, 'utf8'), 'AB gamma');
  const bad = await catalog.call(ctx, 'fs.multi_edit', {
    path: 'm.txt',
    edits: [
      { target_content: 'AB', replacement_content: 'xx' },
      { target_content: 'missing', replacement_content: 'yy' },
    ],
  });
  t.like(bad, { ok: false, error: { error: 'EditFailed' } });
  t.regex(bad.ok ? '' : bad.error.message, /edit 2/);
  t.is(await readFile(file, 'utf8'), 'AB gamma', 'the first edit was not applied either');
  t.like(await catalog.call(ctx, 'fs.multi_edit', { path: 'm.txt', edits: [] }), { ok: false, error: { error: 'InvalidArguments' } });
  t.like(await catalog.call(ctx, 'fs.multi_edit', { path: 'm.txt', edits: [{ target_content: 'AB' }] }), { ok: false, error: { error: 'InvalidArguments' } });
});

test('grep: regex, recursive, path:line: text', async (t) => {
  const { host, ctx } = await setup(t);
  await mkdir(path.join(host, 'src/deep'), { recursive: true });
  await writeFile(path.join(host, 'src/a.ts'), 'const x = 1;\n// TODO fix\n');
  await writeFile(path.join(host, 'src/deep/b.ts'), 'nothing\nTODO: more\n');
  const r = await catalog.call(ctx, 'fs.grep', { pattern: 'TODO:?\\s\\w+', path: 'src' });
  t.like(r, { ok: true, result: '/workspace/src/a.ts:2: // TODO fix\n/workspace/src/deep/b.ts:2: TODO: more' });
  t.like(await catalog.call(ctx, 'fs.grep', { pattern: 'zzz', path: '.' }), { ok: true, result: 'no matches' });
  t.like(await catalog.call(ctx, 'fs.grep', { pattern: '(', path: '.' }), { ok: false, error: { error: 'InvalidArguments' } });
  t.like(await catalog.call(ctx, 'fs.grep', { pattern: 'x', path: '../..' }), { ok: false, error: { error: 'PathOutsideBoundary' } });
});

test('glob: recursive, paths relative to path, empty result is not an error', async (t) => {
  const { host, ctx } = await setup(t);
  await mkdir(path.join(host, 'src/deep'), { recursive: true });
  await writeFile(path.join(host, 'src/a.ts'), '');
  await writeFile(path.join(host, 'src/deep/b.ts'), '');
  await writeFile(path.join(host, 'src/c.js'), '');
  t.like(await catalog.call(ctx, 'fs.glob', { pattern: '**/*.ts', path: 'src' }), { ok: true, result: 'a.ts\ndeep/b.ts' });
  t.like(await catalog.call(ctx, 'fs.glob', { pattern: '*.ts', path: '/workspace' }), { ok: true, result: 'src/a.ts\nsrc/deep/b.ts' });
  t.like(await catalog.call(ctx, 'fs.glob', { pattern: '*.py', path: 'src' }), { ok: true, result: '' });
  t.like(await catalog.call(ctx, 'fs.glob', { pattern: '../*', path: 'src' }), { ok: false, error: { error: 'PathOutsideBoundary' } });
});

test('../ and symlink escapes are PathOutsideBoundary', async (t) => {
  const { host, ctx } = await setup(t);
  const outside = await mkdtemp(path.join(os.tmpdir(), 'orch-outside-'));
  t.teardown(() => rm(outside, { recursive: true, force: true }));
  await writeFile(path.join(outside, 'secret.txt'), 'secret');
  await symlink(path.join(outside, 'secret.txt'), path.join(host, 'link.txt'));
  await symlink(outside, path.join(host, 'linkdir'));
  await symlink(path.join(outside, 'new.txt'), path.join(host, 'dangling.txt'));
  for (const [tool, args] of [
    ['fs.read', { path: '../../etc/passwd' }],
    ['fs.read', { path: '/etc/passwd' }],
    ['fs.read', { path: 'link.txt' }],
    ['fs.read', { path: 'linkdir/secret.txt' }],
    ['fs.write', { path: 'linkdir/new.txt', content: 'x' }],
    ['fs.write', { path: 'dangling.txt', content: 'x' }],
    ['fs.write', { path: 'link.txt', content: 'x' }],
    ['fs.list', { path: 'linkdir' }],
    ['fs.create_dir', { path: 'linkdir/sub' }],
    ['fs.delete', { path: 'linkdir/secret.txt' }],
  ] as const) {
    t.like(await catalog.call(ctx, tool, { ...args }), { ok: false, error: { error: 'PathOutsideBoundary' } }, `${tool} ${JSON.stringify(args)}`);
  }
  t.is(await readFile(path.join(outside, 'secret.txt'), 'utf8'), 'secret');
  await t.throwsAsync(stat(path.join(outside, 'new.txt')));
  // A link that stays inside the volume is fine.
  await writeFile(path.join(host, 'real.txt'), 'inside');
  await symlink(path.join(host, 'real.txt'), path.join(host, 'ok.txt'));
  t.like(await catalog.call(ctx, 'fs.read', { path: 'ok.txt' }), { ok: true, result: 'inside' });
  // No volume at all.
  t.like(await catalog.call(callContext(context()), 'fs.read', { path: '/workspace/a' }), { ok: false, error: { error: 'PathOutsideBoundary' } });
});
