// The loop's tools against real files: cmd.run policy (ToolNotAllowed, CommandNotAllowed, SubcommandNotAllowed),
// fs.* path mapping onto the execution's volumes and the filesystem allowlists (PathOutsideBoundary), missing
// arguments named with the tool, and fs.edit's exactly-one-match rule.
import test from 'ava';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { AgentManifest } from '../../src/agents/manifest/types.ts';
import { runTool, toolDefs, type CmdRequest, type ToolContext } from '../../src/agents/execution/tools.ts';
import type { NodeConfig } from '../../src/config/types.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { createToolCatalog } from '../../src/tools/catalog.ts';

// The loop is handed the node's catalog (issue 19): here the built-in tools with seed defaults.
const catalog = createToolCatalog({ config: { builtin_dispatchers: [], mcp_servers: [] } as unknown as NodeConfig, logger: silentLogger() });

function manifest(over: { tools?: AgentManifest['spec']['tools']; read?: string[]; write?: string[] } = {}): AgentManifest {
  return {
    apiVersion: 'orch.dev/v1',
    kind: 'Agent',
    metadata: { name: 'coder', version: '1.0.0' },
    spec: {
      runtime: { language: 'node', version: '20', image_pull_policy: 'IfNotPresent', isolation: 'process', model: 'default' },
      task: { instruction: 'write code' },
      execution: { mode: 'iterative', max_iterations: 3, llm_timeout_seconds: 30, iteration_timeout: 60, validation: [] },
      security: { network: { mode: 'none', allowlist: [] }, filesystem: { read: over.read ?? [], write: over.write ?? [] }, resources: { timeout: 120 } },
      volumes: [],
      tools: over.tools ?? [{ name: 'fs.write' }, { name: 'fs.read' }, { name: 'fs.edit' }, { name: 'fs.list' }, { name: 'cmd.run', executor: 'builtin:cmd', config: { subcommand_allowlist: { node: [], git: ['status', 'diff'] } } }],
      env: {},
    },
  };
}

async function context(t: import('ava').ExecutionContext, m: AgentManifest, ran: CmdRequest[] = []): Promise<{ ctx: ToolContext; host: string }> {
  const host = await mkdtemp(path.join(os.tmpdir(), 'orch-tools-'));
  t.teardown(() => rm(host, { recursive: true, force: true }));
  const ctx: ToolContext = {
    manifest: m,
    mounts: [{ sandboxPath: '/workspace', hostPath: host, readOnly: false }],
    workdir: '/workspace',
    catalog,
    ceilings: { max_output_bytes: 1000, timeout_ceiling_secs: 5 },
    runCommand: async (req) => {
      ran.push(req);
      return { exit_code: 0, stdout: 'ran', stderr: '', duration_ms: 1, truncated: false };
    },
  };
  return { ctx, host };
}

test('cmd.run: allowlisted commands are dispatched with the node ceilings; others get the seed-001 error names', async (t) => {
  const ran: CmdRequest[] = [];
  const { ctx } = await context(t, manifest(), ran);
  t.like(await runTool(ctx, 'cmd.run', { command: 'node', args: ['main.js'] }), { ok: true, value: { exit_code: 0 } });
  // With an allowlist the name resolves on the system directories only (the runner gets that PATH).
  t.deepEqual(ran[0], { command: 'node', args: ['main.js'], cwd: '/workspace', timeout_secs: 5, max_output_bytes: 1000, env: { PATH: '/usr/local/bin:/usr/bin:/bin' } });
  // `node main.js` in one string is split without a shell.
  await runTool(ctx, 'cmd.run', { command: 'node "my file.js"' });
  t.deepEqual(ran[1]?.args, ['my file.js']);
  t.like(await runTool(ctx, 'cmd.run', { command: 'curl', args: ['http://x'] }), { ok: false, error: { error: 'CommandNotAllowed' } });
  t.like(await runTool(ctx, 'cmd.run', { command: 'git', args: ['push'] }), { ok: false, error: { error: 'SubcommandNotAllowed' } });
  t.like(await runTool(ctx, 'cmd.run', { command: 'git', args: ['status'] }), { ok: true });
  const missing = await runTool(ctx, 'cmd.run', { args: [] });
  t.like(missing, { ok: false, error: { error: 'InvalidArguments' } });
  t.regex(missing.ok ? '' : missing.error.message, /"command".*cmd\.run/);
  t.is(ran.length, 4, 'refused calls never reach the sandbox');
  // git lists the repository's config first, then runs with the command-valued keys turned off (safe-config.ts).
  t.deepEqual(ran[2]?.args, ['config', '--list', '--name-only', '-z']);
  t.deepEqual(ran[3]?.args.slice(0, 3), ['--no-pager', '-c', 'core.fsmonitor=']);
  t.deepEqual(ran[3]?.args.slice(-1), ['status']);
});

test('cmd.run is ToolNotAllowed when the manifest does not declare it', async (t) => {
  const { ctx } = await context(t, manifest({ tools: [{ name: 'fs.read' }] }));
  t.like(await runTool(ctx, 'cmd.run', { command: 'ls' }), { ok: false, error: { error: 'ToolNotAllowed' } });
  t.deepEqual(toolDefs(ctx.manifest, catalog).map((d) => d.name), ['fs_read'], 'only declared tools are offered to the model');
});

test('fs tools act on the volume and refuse paths outside it or outside the allowlists', async (t) => {
  const { ctx, host } = await context(t, manifest({ write: ['/workspace/src/**'] }));
  t.like(await runTool(ctx, 'fs.write', { path: 'src/main.js', content: 'console.log(1)' }), { ok: true });
  t.is(await readFile(path.join(host, 'src/main.js'), 'utf8'), 'console.log(1)');
  t.like(await runTool(ctx, 'fs.read', { path: '/workspace/src/main.js' }), { ok: true, value: 'console.log(1)' });
  t.like(await runTool(ctx, 'fs.write', { path: 'other.txt', content: 'x' }), { ok: false, error: { error: 'PathOutsideBoundary' } });
  t.like(await runTool(ctx, 'fs.read', { path: '../../etc/passwd' }), { ok: false, error: { error: 'PathOutsideBoundary' } });
  t.like(await runTool(ctx, 'fs.read', { path: '/etc/passwd' }), { ok: false, error: { error: 'PathOutsideBoundary' } });
  t.like(await runTool(ctx, 'fs.read', { path: 'nope.txt' }), { ok: false, error: { error: 'NOT_FOUND' } });
  t.like(await runTool(ctx, 'fs.list', { path: '/workspace' }), { ok: true, value: 'src/' });
  t.like(await runTool(ctx, 'fs.write', { path: 'src/x.js', content: null }), { ok: false, error: { error: 'InvalidArguments' } });
});

test('fs.edit replaces exactly one match and leaves the file alone otherwise', async (t) => {
  const { ctx, host } = await context(t, manifest());
  await writeFile(path.join(host, 'a.txt'), 'one two two');
  t.like(await runTool(ctx, 'fs.edit', { path: 'a.txt', target_content: 'two', replacement_content: '2' }), { ok: false, error: { error: 'EditFailed' } });
  t.like(await runTool(ctx, 'fs.edit', { path: 'a.txt', target_content: 'one', replacement_content: '$1' }), { ok: true });
  t.is(await readFile(path.join(host, 'a.txt'), 'utf8'), '$1 two two');
});
