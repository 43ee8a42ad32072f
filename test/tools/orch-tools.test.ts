// Management tools: orch.schema.get/validate, orch.tools.list/search filtered by the caller's context,
// orch.runtime.list, orch.system.info/config (secrets redacted), and orch.agent.create/list/export/update/delete
// through a real AgentService on PGlite.
import test from 'ava';
import { parse as parseYaml } from 'yaml';
import { AgentService } from '../../src/agents/service.ts';
import { agentManifestSchema } from '../../src/agents/manifest/schema.ts';
import { workflowManifestSchema } from '../../src/workflow/manifest/schema.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { freshPglite } from '../support/engines.ts';
import { createToolCatalog } from '../../src/tools/catalog.ts';
import { contextForPrincipal, nodeContexts } from '../../src/tools/policy.ts';
import { callContext, context, nodeConfig, principal } from './helpers.ts';

const config = nodeConfig({
  database: { url: 'postgres://orch:hunter2@db.internal:5432/orch' },
  llm_providers: [{ name: 'openai', type: 'openai', api_key: 'sk-live-123', models: [{ alias: 'default', model: 'gpt' }] }],
  billing: { stripe_secret_key: 'sk_stripe_456' },
  builtin_dispatchers: [{ name: 'web.search', config: { api_key: 'brave-789' } }],
  mcp_servers: [{ name: 'gh', transport: 'http', url: 'https://mcp.example.com', headers: { authorization: 'Bearer tok-abc' } }],
});
const catalog = createToolCatalog({ config, logger: silentLogger(), version: '9.9.9' });
const system = callContext({ ...nodeContexts['orch-system-agent-runtime']! });

const manifest = (name: string, version: string): string => `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: ${name}, version: ${version}, description: "${name} agent", labels: { team: core } }
spec:
  runtime: { language: python, version: "3.12" }
  task: { instruction: Say hello. }
  tools: [ fs.read ]
`;

test('orch.schema.get serves the agent and the workflow manifest schemas', async (t) => {
  t.deepEqual(await catalog.call(system, 'orch.schema.get', { key: 'agent/manifest/v1' }), { ok: true, result: agentManifestSchema });
  t.deepEqual(await catalog.call(system, 'orch.schema.get', { key: 'workflow/manifest/v1' }), { ok: true, result: workflowManifestSchema });
  t.like(await catalog.call(system, 'orch.schema.get', { key: 'nope/v1' }), { ok: false, error: { error: 'NOT_FOUND' } });
});

test('orch.schema.validate checks agent manifests', async (t) => {
  t.like(await catalog.call(system, 'orch.schema.validate', { kind: 'agent', manifest_yaml: manifest('hello', '1.0.0') }), { ok: true, result: { valid: true } });
  const bad = await catalog.call(system, 'orch.schema.validate', { kind: 'agent', manifest_yaml: 'apiVersion: orch.dev/v1\nkind: Agent\nmetadata: { name: Bad_Name, version: 1 }\n' });
  t.like(bad, { ok: true, result: { valid: false } });
  t.true(bad.ok && Array.isArray((bad.result as { errors: unknown[] }).errors));
});

test('orch.tools.list and search are filtered by the caller context', async (t) => {
  const all = await catalog.call(system, 'orch.tools.list', {});
  const allTools = (all.ok ? (all.result as { tools: { name: string }[] }).tools : []).map((x) => x.name);
  t.true(allTools.includes('fs.read') && allTools.includes('cmd.run'));
  const user = callContext(contextForPrincipal(principal(['user'])));
  const listed = await catalog.call(user, 'orch.tools.list', {});
  t.like(listed, { ok: true, result: { tool: 'orch.tools.list' } });
  const names = (listed.ok ? (listed.result as { tools: { name: string }[]; total: number }).tools : []).map((x) => x.name);
  t.false(names.some((n) => n.startsWith('fs.') || n === 'cmd.run'));
  t.true(names.includes('orch.runtime.list'));
  const search = await catalog.call(system, 'orch.tools.search', { query: 'directory' });
  const found = (search.ok ? (search.result as { tools: { name: string }[] }).tools : []).map((x) => x.name);
  t.true(found.includes('fs.list') && found.includes('fs.create_dir'));
  const userSearch = await catalog.call(user, 'orch.tools.search', { query: 'directory' });
  t.deepEqual(userSearch.ok ? (userSearch.result as { tools: unknown[] }).tools : null, []);
  const byName = await catalog.call(system, 'orch.tools.search', { query: 'multi_edit' });
  t.deepEqual((byName.ok ? (byName.result as { tools: { name: string }[] }).tools : []).map((x) => x.name), ['fs.multi_edit']);
});

test('orch.runtime.list lists language/version pairs and custom_runtime_supported', async (t) => {
  const r = await catalog.call(system, 'orch.runtime.list', {});
  t.like(r, { ok: true, result: { tool: 'orch.runtime.list', custom_runtime_supported: true } });
  const runtimes = r.ok ? (r.result as { runtimes: { language: string; version: string; image: string; deprecated: boolean }[] }).runtimes : [];
  t.true(runtimes.some((x) => x.language === 'python' && x.version === '3.12' && typeof x.image === 'string'));
  const go = await catalog.call(system, 'orch.runtime.list', { language: 'go' });
  t.deepEqual((go.ok ? (go.result as { runtimes: { language: string }[] }).runtimes : []).map((x) => x.language), ['go']);
});

test('orch.system.info and orch.system.config (secrets redacted)', async (t) => {
  t.like(await catalog.call(system, 'orch.system.info', {}), { ok: true, result: { version: '9.9.9', status: 'healthy', node_id: 'node-t1', role: 'hybrid' } });
  const r = await catalog.call(system, 'orch.system.config', {});
  t.true(r.ok);
  const text = r.ok ? (r.result as { content_yaml: string }).content_yaml : '';
  for (const secret of ['hunter2', 'sk-live-123', 'sk_stripe_456', 'brave-789', 'tok-abc']) t.false(text.includes(secret), secret);
  const parsed = parseYaml(text) as typeof config;
  t.is(parsed.node.id, 'node-t1');
  t.is(parsed.llm_providers[0]?.api_key, '[REDACTED]');
  t.regex(parsed.database.url ?? '', /^postgres:\/\/orch:.*REDACTED.*@db\.internal:5432\/orch$/);
  t.is(parsed.mcp_servers[0]?.url, 'https://mcp.example.com');
  // External callers do not get the config at all.
  t.like(await catalog.call(callContext(contextForPrincipal(principal(['user']))), 'orch.system.config', {}), { ok: false, error: { error: 'ToolNotAllowed' } });
});

test('orch.agent.create, list, export, update and delete through a real AgentService on PGlite', async (t) => {
  // From the schema template, not memory:// (an initdb in WebAssembly and every migration: ~5 s of CPU).
  const { db, cleanup } = await freshPglite('orch-tools-')();
  t.teardown(cleanup);
  await migrate(db);
  const agents = new AgentService(db, silentLogger());
  const c = createToolCatalog({ config, logger: silentLogger(), agents });
  const ctx = callContext(context());
  const created = await c.call(ctx, 'orch.agent.create', { manifest_yaml: manifest('hello', '1.0.0') });
  t.like(created, { ok: true, result: { deployed: true } });
  const agentId = created.ok ? (created.result as { agent_id: string }).agent_id : '';
  t.like(await c.call(ctx, 'orch.agent.create', { manifest_yaml: manifest('hello', '1.0.0') }), { ok: false, error: { error: 'ALREADY_EXISTS' } });
  t.like(await c.call(ctx, 'orch.agent.create', { manifest_yaml: manifest('hello', '1.0.0'), force: true }), { ok: true, result: { agent_id: agentId } });
  t.like(await c.call(ctx, 'orch.agent.create', { manifest_yaml: 'kind: Agent' }), { ok: false, error: { error: 'InvalidManifest' } });
  const list = await c.call(ctx, 'orch.agent.list', {});
  t.like(list, { ok: true, result: { total: 1 } });
  t.like(list.ok ? (list.result as { agents: unknown[] }).agents[0] : {}, { id: agentId, name: 'hello', version: '1.0.0', labels: { team: 'core' } });
  t.like(await c.call(ctx, 'orch.agent.update', { manifest_yaml: manifest('hello', '1.1.0') }), { ok: true, result: { agent_id: agentId, version: '1.1.0' } });
  const exported = await c.call(ctx, 'orch.agent.export', { name: 'hello' });
  t.like(exported, { ok: true, result: { agent_id: agentId, version: '1.1.0' } });
  t.regex(exported.ok ? (exported.result as { manifest_yaml: string }).manifest_yaml : '', /version: 1\.1\.0/);
  // Another tenant sees nothing.
  const other = callContext(context(), { tenantId: 'globex', principal: principal([], 'globex', 'carol') });
  t.like(await c.call(other, 'orch.agent.list', {}), { ok: true, result: { total: 0 } });
  t.like(await c.call(other, 'orch.agent.export', { name: 'hello' }), { ok: false, error: { error: 'NOT_FOUND' } });
  t.like(await c.call(ctx, 'orch.agent.delete', { agent_id: agentId }), { ok: true, result: { agent_id: agentId, deleted: true } });
  t.like(await c.call(ctx, 'orch.agent.list', {}), { ok: true, result: { total: 0 } });
  // Without an execution service the task tools say so instead of pretending.
  t.like(await c.call(ctx, 'orch.task.list', {}), { ok: false, error: { error: 'NotAvailable' } });
});

test('orch.task.wait polls until terminal, and reports timed_out when the timeout passes first', async (t) => {
  let polls = 0;
  const view = (status: string) => ({ execution_id: 'e1', agent_id: 'a1', status, iteration: 2, final_output: status === 'completed' ? 'done' : null, reason: null, started_at: 's', completed_at: null });
  const executions = {
    get: async (_tenant: string, id: string) => {
      polls++;
      if (id === 'stuck') return view('running');
      return view(polls >= 2 ? 'completed' : 'running');
    },
  } as unknown as import('../../src/agents/execution/service.ts').ExecutionService;
  const c = createToolCatalog({ config, logger: silentLogger(), executions: () => executions });
  const ctx = callContext(context());
  t.like(await c.call(ctx, 'orch.task.wait', { execution_id: 'e1', poll_interval_seconds: 1 }), { ok: true, result: { status: 'completed', iteration_count: 2, last_output: 'done' } });
  t.is(polls, 2);
  const started = Date.now();
  const r = await c.call(ctx, 'orch.agent.wait', { execution_id: 'stuck', poll_interval_seconds: 1, timeout_seconds: 1 });
  t.like(r, { ok: true, result: { status: 'running', timed_out: true } });
  t.true(Date.now() - started < 60_000, 'the timeout, not the 300 s default, ended the wait');
});
