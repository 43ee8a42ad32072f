// orch.agent.search and orch.workflow.search on in-process nodes over PostgreSQL, called as an external MCP client
// would (official SDK over Streamable HTTP at /v1/mcp). Proves: agents and workflows deployed over HTTP are indexed
// at deploy time (rows in cortex_documents before any search), the right one ranks first, limit / min_score /
// labels / status / include_platform_templates filter, another tenant's agents are never found, an update is
// re-indexed, an agent deployed behind the node's back is indexed lazily by the search, and a node without Cortex
// answers `Cortex not configured`.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { silentLogger } from '../../src/logging/logger.ts';
import { AgentService } from '../../src/agents/service.ts';
import { startTestNode, type TestNode } from '../support/in-process-node.ts';

type Running = TestNode;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
let withCortex: Running;
let without: Running;
const T1 = `s1-${randomUUID().slice(0, 8)}`;
const T2 = `s2-${randomUUID().slice(0, 8)}`;

const start = (cortexYaml: string): Promise<Running> => startTestNode((fn) => void cleanups.push(fn), { name: 'search', role: 'controller', extraYaml: cortexYaml });

const agentYaml = (name: string, description: string, labels: Record<string, string>, version = '1.0.0'): string => `apiVersion: orch.dev/v1
kind: Agent
metadata:
  name: ${name}
  version: ${version}
  description: "${description}"
  labels: ${JSON.stringify(labels)}
spec:
  runtime: { language: python, version: "3.12" }
  task: { instruction: "Do the job." }
`;

const workflowYaml = (name: string, description: string, labels: Record<string, string>): string => `apiVersion: orch.dev/v1
kind: Workflow
metadata:
  name: ${name}
  version: 1.0.0
  description: "${description}"
  labels: ${JSON.stringify(labels)}
spec:
  initial_state: go
  states:
    go: { kind: System, command: "true", transitions: [] }
`;

async function post(r: Running, tenant: string, url: string, body: unknown): Promise<number> {
  return (await r.api('POST', url, body, await r.token(tenant))).status;
}

async function mcp(r: Running, tenant: string): Promise<Client> {
  return r.mcp(await r.token(tenant), 'search-test');
}

interface Found {
  tool: string;
  query: string;
  total: number;
  results: { id: string; name: string; version: string; description: string; labels: Record<string, string>; score: number }[];
}

async function search(c: Client, name: string, args: Record<string, unknown>): Promise<Found> {
  const r = (await c.callTool({ name, arguments: args })) as CallToolResult;
  const first = r.content[0];
  const text = first?.type === 'text' ? first.text : '';
  if (r.isError) throw new Error(text);
  return JSON.parse(text) as Found;
}

test.before(async () => {
  withCortex = await start('  cortex: {}\n');
  without = await start('');
  const agents: [string, string, Record<string, string>][] = [
    ['pr-reviewer', 'Reviews pull requests and comments on code quality', { team: 'platform' }],
    ['doc-summarizer', 'Summarizes long documents into short briefs', { team: 'content' }],
    ['sql-migrator', 'Writes database schema migrations for PostgreSQL', { team: 'data' }],
    ['translator', 'Translates text between English and French', { team: 'content' }],
  ];
  for (const [name, description, labels] of agents) {
    const status = await post(withCortex, T1, '/v1/agents', { manifest_yaml: agentYaml(name, description, labels) });
    if (status !== 201) throw new Error(`deploying ${name}: HTTP ${status}`);
  }
  if ((await post(withCortex, T2, '/v1/agents', { manifest_yaml: agentYaml('pr-checker', 'Reviews pull requests in another tenant', { team: 'platform' }) })) !== 201) {
    throw new Error('deploying pr-checker');
  }
  for (const [name, description, labels] of [
    ['nightly-backup', 'Backs up the production database every night', { area: 'ops' }],
    ['release-notes', 'Drafts release notes from merged pull requests', { area: 'docs' }],
  ] as const) {
    if ((await post(withCortex, T1, '/v1/workflows', { manifest_yaml: workflowYaml(name, description, labels) })) !== 201) throw new Error(`deploying ${name}`);
  }
});

test.after.always(async () => {
  for (const fn of cleanups.reverse()) await Promise.resolve().then(fn).catch(() => undefined);
});

test.serial('agents and workflows are indexed when deployed, per tenant', async (t) => {
  const rows = await withCortex.node.db.query<{ tenant_id: string; kind: string; n: string }>(
    'SELECT tenant_id, kind, count(*)::text AS n FROM cortex_documents GROUP BY tenant_id, kind ORDER BY tenant_id, kind',
  );
  t.deepEqual(
    rows.rows.map((r) => [r.tenant_id, r.kind, Number(r.n)]),
    [
      [T1, 'agent', 4],
      [T1, 'workflow', 2],
      [T2, 'agent', 1],
    ].sort((a, b) => String(a[0]).localeCompare(String(b[0])) || String(a[1]).localeCompare(String(b[1]))),
  );
});

test.serial('orch.agent.search: the right agent first, scores at or above 0.3, never another tenant', async (t) => {
  const c = await mcp(withCortex, T1);
  const cases: [string, string][] = [
    ['review pull requests', 'pr-reviewer'],
    ['summarize a document', 'doc-summarizer'],
    ['database migration', 'sql-migrator'],
    ['translate to french', 'translator'],
  ];
  for (const [query, expected] of cases) {
    const r = await search(c, 'orch.agent.search', { query });
    t.is(r.tool, 'orch.agent.search');
    t.is(r.query, query);
    t.is(r.results[0]?.name, expected, `${query}: ${JSON.stringify(r.results.map((x) => [x.name, x.score]))}`);
    t.is(r.total, r.results.length);
    t.true(r.results.every((x) => x.score >= 0.3 && x.score <= 1), query);
    t.false(r.results.some((x) => x.name === 'pr-checker'), 'another tenant\'s agent is never found');
    t.truthy(r.results[0]?.id);
    t.is(r.results[0]?.version, '1.0.0');
  }
  const top = await search(c, 'orch.agent.search', { query: 'review pull requests' });
  t.deepEqual(top.results[0]?.labels, { team: 'platform' });
  t.is(top.results[0]?.description, 'Reviews pull requests and comments on code quality');
  const none = await search(c, 'orch.agent.search', { query: 'unrelated weather forecast' });
  t.deepEqual(none.results, [], 'nothing reaches the default min_score 0.3');
  // The other tenant finds its own.
  const c2 = await mcp(withCortex, T2);
  const r2 = await search(c2, 'orch.agent.search', { query: 'review pull requests' });
  t.deepEqual(r2.results.map((x) => x.name), ['pr-checker']);
});

test.serial('limit, min_score, labels, status and bad arguments', async (t) => {
  const c = await mcp(withCortex, T1);
  const all = await search(c, 'orch.agent.search', { query: 'agent', min_score: 0 });
  t.is(all.results.length, 4, 'min_score 0 lets every visible agent through');
  t.true(all.results.every((x, i) => i === 0 || all.results[i - 1]!.score >= x.score), 'best first');
  const one = await search(c, 'orch.agent.search', { query: 'agent', min_score: 0, limit: 1 });
  t.is(one.results.length, 1);
  t.is(one.results[0]?.name, all.results[0]?.name);
  const high = await search(c, 'orch.agent.search', { query: 'review pull requests', min_score: 0.99 });
  t.deepEqual(high.results, []);
  const content = await search(c, 'orch.agent.search', { query: 'agent', min_score: 0, labels: { team: 'content' } });
  t.deepEqual(content.results.map((x) => x.name).sort(), ['doc-summarizer', 'translator']);
  const wrong = await search(c, 'orch.agent.search', { query: 'review pull requests', labels: { team: 'content' } });
  t.deepEqual(wrong.results, [], 'the label filter applies before ranking');
  const deployed = await search(c, 'orch.agent.search', { query: 'agent', min_score: 0, status: 'deployed' });
  const paused = await search(c, 'orch.agent.search', { query: 'agent', min_score: 0, status: 'no-such-status' });
  t.is(deployed.results.length + paused.results.length, 4);
  t.deepEqual(paused.results, []);
  for (const bad of [{ limit: 0 }, { limit: 101 }, { min_score: 1.5 }, { labels: ['x'] }, { labels: { team: 1 } }, { query: '' }]) {
    const r = (await c.callTool({ name: 'orch.agent.search', arguments: { query: 'x', ...bad } })) as CallToolResult;
    t.true(r.isError, JSON.stringify(bad));
    const first = r.content[0];
    t.regex(first?.type === 'text' ? first.text : '', /^InvalidArguments: /, JSON.stringify(bad));
  }
});

test.serial('orch.workflow.search ranks workflows with the same index; labels filter', async (t) => {
  const c = await mcp(withCortex, T1);
  const backup = await search(c, 'orch.workflow.search', { query: 'database backup every night' });
  t.is(backup.tool, 'orch.workflow.search');
  t.is(backup.results[0]?.name, 'nightly-backup', JSON.stringify(backup.results));
  const notes = await search(c, 'orch.workflow.search', { query: 'write release notes' });
  t.is(notes.results[0]?.name, 'release-notes');
  const filtered = await search(c, 'orch.workflow.search', { query: 'write release notes', labels: { area: 'ops' } });
  t.false(filtered.results.some((x) => x.name === 'release-notes'));
});

test.serial('an update is re-indexed; global agents are platform templates; lazy indexing of unindexed agents', async (t) => {
  const c = await mcp(withCortex, T1);
  t.is(await post(withCortex, T1, '/v1/agents', { manifest_yaml: agentYaml('translator', 'Converts invoices into spreadsheets', { team: 'content' }, '2.0.0') }), 201);
  const invoices = await search(c, 'orch.agent.search', { query: 'convert invoices to spreadsheets' });
  t.is(invoices.results[0]?.name, 'translator');
  t.is(invoices.results[0]?.version, '2.0.0');
  const french = await search(c, 'orch.agent.search', { query: 'translate to french' });
  t.false(french.results.some((x) => x.name === 'translator'), 'the old description is no longer indexed');

  // A global agent written straight to the database (no deploy listener): the search indexes it when it first sees it.
  const direct = new AgentService(withCortex.node.db, silentLogger());
  await direct.deploy({ tenant: 'orch-system', subject: 'op', roles: ['operator'], scope: 'global', yaml: agentYaml('changelog-bot', 'Reviews pull requests and writes changelog entries', { team: 'platform' }) });
  const before = await withCortex.node.db.query("SELECT 1 FROM cortex_documents WHERE tenant_id = 'orch-system'");
  t.is(before.rows.length, 0);
  const withGlobal = await search(c, 'orch.agent.search', { query: 'review pull requests' });
  t.true(withGlobal.results.some((x) => x.name === 'changelog-bot'), JSON.stringify(withGlobal.results));
  const after = await withCortex.node.db.query("SELECT 1 FROM cortex_documents WHERE tenant_id = 'orch-system' AND kind = 'agent'");
  t.is(after.rows.length, 1, 'indexed by the search');
  const noGlobal = await search(c, 'orch.agent.search', { query: 'review pull requests', include_platform_templates: false });
  t.false(noGlobal.results.some((x) => x.name === 'changelog-bot'));
  t.true(noGlobal.results.some((x) => x.name === 'pr-reviewer'));
});

test('without Cortex both tools answer `Cortex not configured`', async (t) => {
  const c = await mcp(without, T1);
  for (const name of ['orch.agent.search', 'orch.workflow.search']) {
    const r = (await c.callTool({ name, arguments: { query: 'anything' } })) as CallToolResult;
    t.true(r.isError, name);
    const first = r.content[0];
    t.regex(first?.type === 'text' ? first.text : '', /Cortex not configured/, name);
  }
  const missing = (await c.callTool({ name: 'orch.agent.search', arguments: {} })) as CallToolResult;
  t.true(missing.isError);
});
