// The catalog's call pipeline and policy: ToolNotFound, InvalidArguments naming the field and the tool, the seed's
// policy error names, deny wins over allow, list() filtered by the context, skip_judge defaults and the node
// config's override, and the node contexts.
import test from 'ava';
import { silentLogger } from '../../src/logging/logger.ts';
import { createToolCatalog } from '../../src/tools/catalog.ts';
import { checkCommand, checkDomain, checkPath, contextForPrincipal, globMatch, isToolAllowed, nodeContexts } from '../../src/tools/policy.ts';
import type { ToolCallContext } from '../../src/tools/types.ts';
import { callContext, context, nodeConfig, principal, volume } from './helpers.ts';

const catalog = createToolCatalog({ config: nodeConfig(), logger: silentLogger() });

test('unknown tools answer ToolNotFound; later capabilities are not registered', async (t) => {
  const ctx = callContext(context());
  t.like(await catalog.call(ctx, 'fs.nope', {}), { ok: false, error: { error: 'ToolNotFound' } });
  for (const later of ['orch.volume.list', 'orch.git.clone', 'orch.script.list', 'orch.file.read']) {
    t.is(catalog.get(later), undefined, later);
    t.like(await catalog.call(ctx, later, {}), { ok: false, error: { error: 'ToolNotFound' } });
  }
  // The pipeline and generative tools are always registered; without their services they answer NotAvailable.
  for (const [tool, args] of [['orch.execute.intent', { intent: 'x' }], ['orch.execute.status', { pipeline_execution_id: 'x' }], ['orch.agent.generate', { input: 'x' }], ['orch.workflow.generate', { input: 'x' }]] as const) {
    t.like(await catalog.call(ctx, tool, args), { ok: false, error: { error: 'NotAvailable' } }, tool);
  }
});

test('a missing or null required argument is InvalidArguments with a sentence naming the field and the tool', async (t) => {
  const ctx = callContext(context());
  const missing = await catalog.call(ctx, 'fs.write', { path: 'a.txt' });
  t.deepEqual(missing, { ok: false, error: { error: 'InvalidArguments', message: 'missing required argument "content" for tool fs.write' } });
  const nul = await catalog.call(ctx, 'fs.edit', { path: 'a', target_content: null, replacement_content: 'x' });
  t.like(nul, { ok: false, error: { error: 'InvalidArguments', message: 'missing required argument "target_content" for tool fs.edit' } });
  t.like(await catalog.call(ctx, 'orch.schema.validate', { kind: 'agent' }), { ok: false, error: { message: 'missing required argument "manifest_yaml" for tool orch.schema.validate' } });
  t.like(await catalog.call(ctx, 'cmd.run', {}), { ok: false, error: { error: 'InvalidArguments', message: 'missing required argument "command" for tool cmd.run' } });
  // Tools without required parameters accept an empty object.
  t.like(await catalog.call(ctx, 'orch.tools.list', {}), { ok: true });
});

test('policy errors carry the seed names: ToolNotAllowed, PathOutsideBoundary, DomainNotAllowed, CommandNotAllowed, SubcommandNotAllowed, PERMISSION_DENIED', async (t) => {
  const { mounts } = await volume(t);
  const ran: string[] = [];
  const runCommand: ToolCallContext['runCommand'] = async (req) => {
    ran.push(req.command);
    return { exit_code: 0, stdout: '', stderr: '', duration_ms: 1, truncated: false };
  };
  const sec = context({
    allow: ['fs.*', 'cmd.run', 'web.fetch'],
    filesystem: { read: [], write: ['/workspace/out/**'] },
    network: { mode: 'allow', allowlist: ['example.com'] },
    subcommandAllowlist: { git: ['status'], node: [] },
  });
  const ctx = callContext(sec, { mounts, workdir: '/workspace', runCommand });
  t.like(await catalog.call(ctx, 'orch.agent.list', {}), { ok: false, error: { error: 'ToolNotAllowed' } });
  t.like(await catalog.call(ctx, 'fs.write', { path: 'x.txt', content: 'x' }), { ok: false, error: { error: 'PathOutsideBoundary' } });
  t.like(await catalog.call(ctx, 'fs.read', { path: '/etc/passwd' }), { ok: false, error: { error: 'PathOutsideBoundary' } });
  t.like(await catalog.call(ctx, 'web.fetch', { url: 'http://127.0.0.1:1/' }), { ok: false, error: { error: 'DomainNotAllowed' } });
  t.like(await catalog.call(ctx, 'cmd.run', { command: 'curl', args: ['x'] }), { ok: false, error: { error: 'CommandNotAllowed' } });
  t.like(await catalog.call(ctx, 'cmd.run', { command: 'git push' }), { ok: false, error: { error: 'SubcommandNotAllowed' } });
  t.like(await catalog.call(ctx, 'cmd.run', { command: 'git', args: ['status'] }), { ok: true });
  t.deepEqual(ran, ['git', 'git'], 'refused commands never reach the sandbox (git lists its config, then runs)');
  const ro = callContext(context(), { mounts: [{ ...mounts![0]!, readOnly: true }], workdir: '/workspace' });
  t.like(await catalog.call(ro, 'fs.write', { path: 'x.txt', content: 'x' }), { ok: false, error: { error: 'PERMISSION_DENIED' } });
  // A caller without a sandbox cannot run commands.
  t.like(await catalog.call(callContext(context()), 'cmd.run', { command: 'ls' }), { ok: false, error: { error: 'NoSandbox' } });
});

test('deny wins over allow; globs match dotted names', (t) => {
  t.true(globMatch('fs.*', 'fs.read'));
  t.true(globMatch('orch.*', 'orch.agent.list'));
  t.false(globMatch('fs.*', 'cmd.run'));
  const ctx = context({ allow: ['fs.*'], deny: ['fs.delete'] });
  t.true(isToolAllowed(ctx, 'fs.read'));
  t.false(isToolAllowed(ctx, 'fs.delete'));
  t.false(isToolAllowed(ctx, 'cmd.run'));
  t.false(isToolAllowed(context({ allow: ['fs.delete'], deny: ['fs.*'] }), 'fs.delete'));
  t.true(isToolAllowed(context(), 'anything'), 'an empty allow list allows every tool');
});

test('list() shows only what the context allows, in name order', (t) => {
  const names = catalog.list(context({ allow: ['fs.*'], deny: ['fs.delete'] })).map((i) => i.name);
  t.deepEqual(names, ['fs.create_dir', 'fs.edit', 'fs.glob', 'fs.grep', 'fs.list', 'fs.multi_edit', 'fs.read', 'fs.write']);
  const all = catalog.list(context()).map((i) => i.name);
  t.deepEqual(all, [...all].sort());
  t.true(all.includes('cmd.run') && all.includes('orch.runtime.list') && all.includes('web.fetch'));
  const external = catalog.list(nodeContexts['orch-external-default']!).map((i) => i.name);
  t.false(external.some((n) => n.startsWith('fs.') || n.startsWith('cmd.') || n.startsWith('web.')));
  t.true(external.includes('orch.tools.list') && external.includes('orch.agent.list') && external.includes('orch.schema.get'));
  t.false(external.includes('orch.agent.create'));
  t.false(external.includes('orch.system.config'));
  for (const info of catalog.list(context())) t.is(info.source, 'builtin');
});

test('skip_judge: seed defaults, overridden per tool by builtin_dispatchers capabilities', (t) => {
  const by = (c: typeof catalog) => Object.fromEntries(c.list(context()).map((i) => [i.name, i.skip_judge]));
  const d = by(catalog);
  t.like(d, {
    'cmd.run': false,
    'fs.read': true,
    'fs.write': false,
    'fs.list': true,
    'fs.grep': true,
    'fs.glob': true,
    'fs.edit': false,
    'fs.multi_edit': false,
    'fs.create_dir': false,
    'fs.delete': false,
    'web.search': true,
    'web.fetch': true,
    'orch.agent.create': true,
    'orch.task.execute': false,
    'orch.task.cancel': false,
    'orch.task.remove': false,
    'orch.task.wait': true,
  });
  const overridden = createToolCatalog({
    config: nodeConfig({
      builtin_dispatchers: [
        { name: 'cmd', capabilities: [{ tool: 'cmd.run', skip_judge: true }] },
        { name: 'fs', capabilities: [{ tool: 'fs.read', skip_judge: false }] },
      ],
    }),
    logger: silentLogger(),
  });
  t.like(by(overridden), { 'cmd.run': true, 'fs.read': false, 'fs.write': false });
  t.is(overridden.get('cmd.run')?.skipJudge, true);
});

test('node contexts and contextForPrincipal', (t) => {
  const op = contextForPrincipal(principal(['operator']));
  t.true(isToolAllowed(op, 'orch.system.config'));
  t.true(isToolAllowed(op, 'web.fetch'));
  t.false(isToolAllowed(op, 'fs.read'), 'no volume: no fs');
  t.false(isToolAllowed(op, 'cmd.run'));
  t.true(isToolAllowed(contextForPrincipal(principal(['operator']), { hasVolume: true }), 'fs.read'));
  const user = contextForPrincipal(principal(['user']));
  t.is(user.name, 'orch-external-default');
  t.true(isToolAllowed(user, 'orch.runtime.list'));
  t.false(isToolAllowed(user, 'orch.agent.delete'));
  t.false(isToolAllowed(user, 'fs.read'));
  t.true(isToolAllowed(nodeContexts['orch-system-agent-runtime']!, 'cmd.run'));
  // contextForPrincipal hands out copies.
  user.allow.push('fs.read');
  t.false(nodeContexts['orch-external-default']!.allow.includes('fs.read'));
});

test('checkDomain: none denies all, allow uses the allowlist with suffix match, deny blocks the list', (t) => {
  t.like(checkDomain(context({ network: { mode: 'none', allowlist: [] } }), 'https://example.com/'), { error: 'DomainNotAllowed' });
  const allow = context({ network: { mode: 'allow', allowlist: ['example.com'] } });
  t.is(checkDomain(allow, 'https://example.com/a'), undefined);
  t.is(checkDomain(allow, 'https://api.example.com/a'), undefined);
  t.like(checkDomain(allow, 'https://badexample.com/'), { error: 'DomainNotAllowed' });
  t.like(checkDomain(allow, 'https://example.com.evil.io/'), { error: 'DomainNotAllowed' });
  const deny = context({ network: { mode: 'deny', allowlist: ['evil.io'] } });
  t.like(checkDomain(deny, 'https://x.evil.io/'), { error: 'DomainNotAllowed' });
  t.is(checkDomain(deny, 'https://example.com/'), undefined);
});

test('checkPath and checkCommand', (t) => {
  const ctx = context({ filesystem: { read: ['/workspace'], write: ['/workspace/src/**'] }, subcommandAllowlist: { npm: ['test', 'run'], ls: ['*'] } });
  t.is(checkPath(ctx, '/workspace/a/b', 'read'), undefined);
  t.like(checkPath(ctx, '/workspace/a', 'write'), { error: 'PathOutsideBoundary' });
  t.is(checkPath(ctx, '/workspace/src/x.ts', 'write'), undefined);
  t.like(checkPath(ctx, '/workspace/srcx', 'write'), { error: 'PathOutsideBoundary' });
  t.is(checkCommand(ctx, 'npm', ['test']), undefined);
  t.like(checkCommand(ctx, 'npm', ['publish']), { error: 'SubcommandNotAllowed' });
  t.like(checkCommand(ctx, 'npm', []), { error: 'SubcommandNotAllowed' });
  t.is(checkCommand(ctx, '/bin/ls', ['-la']), undefined);
  t.like(checkCommand(ctx, 'rm', ['-rf']), { error: 'CommandNotAllowed' });
  t.like(checkCommand(context({ allow: ['fs.*'] }), 'ls', []), { error: 'ToolNotAllowed' });
});

test('cmd.run: node ceilings, ExecTimeoutCeilingExceeded, and output over the ceiling truncated (not an error)', async (t) => {
  const c = createToolCatalog({ config: nodeConfig({ builtin_dispatchers: [{ name: 'cmd', config: { max_output_bytes: 100, timeout_ceiling_secs: 2 } }] }), logger: silentLogger() });
  const seen: { timeout_secs: number; max_output_bytes: number }[] = [];
  let reply = { exit_code: 0, stdout: 'ok', stderr: '', duration_ms: 5, truncated: false };
  const ctx = callContext(context(), {
    runCommand: async (req) => {
      seen.push({ timeout_secs: req.timeout_secs, max_output_bytes: req.max_output_bytes });
      return reply;
    },
  });
  t.like(await c.call(ctx, 'cmd.run', { command: 'echo hi' }), { ok: true, result: { exit_code: 0, stdout: 'ok' } });
  t.deepEqual(seen[0], { timeout_secs: 2, max_output_bytes: 100 });
  reply = { exit_code: 1, stdout: '', stderr: 'boom', duration_ms: 5, truncated: false };
  t.like(await c.call(ctx, 'cmd.run', { command: 'false' }), { ok: true, result: { exit_code: 1 } }, 'a non-zero exit is a result');
  reply = { exit_code: 137, stdout: '', stderr: 'killed', duration_ms: 2100, truncated: false };
  t.like(await c.call(ctx, 'cmd.run', { command: 'sleep', args: ['10'] }), { ok: false, error: { error: 'ExecTimeoutCeilingExceeded' } });
  reply = { exit_code: 0, stdout: 'x'.repeat(100), stderr: '', duration_ms: 5, truncated: true };
  t.like(await c.call(ctx, 'cmd.run', { command: 'yes' }), { ok: true, result: { truncated: true, exit_code: 0 } });
  const dflt = createToolCatalog({ config: nodeConfig(), logger: silentLogger() });
  reply = { exit_code: 0, stdout: '', stderr: '', duration_ms: 1, truncated: false };
  await dflt.call(ctx, 'cmd.run', { command: 'true' });
  t.deepEqual(seen.at(-1), { timeout_secs: 300, max_output_bytes: 524288 });
});
