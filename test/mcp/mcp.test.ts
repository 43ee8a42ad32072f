// MCP over Streamable HTTP at /v1/mcp with the official SDK client over real sockets: the real bearer auth hook,
// tools/list filtered by the caller's security context, tools/call through the catalog with origin 'mcp', policy
// errors as isError results, 401 without a token, and the `orch mcp` stdio proxy (in-memory downstream).
import test from 'ava';
import Fastify, { type FastifyInstance } from 'fastify';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createJwtAuthenticator } from '../../src/auth/jwt-authenticator.ts';
import { installAuth } from '../../src/gateway/http/auth-hook.ts';
import { installErrorHandling } from '../../src/gateway/http/errors.ts';
import { registerMcpRoute } from '../../src/mcp/http.ts';
import { runProxy } from '../../src/mcp/proxy.ts';
import { isToolAllowed } from '../../src/tools/policy.ts';
import type { CallOrigin, ToolCatalog, ToolDefinition, ToolInfo } from '../../src/tools/types.ts';
import { makeTestIdp, type TestIdp } from '../support/jwks.ts';

// ---- a tiny stand-in catalog over the real policy (until the real catalog is wired in here) ----

const allowed = isToolAllowed;
const calls: Array<{ name: string; origin: CallOrigin; tenantId: string; subject: string }> = [];
function def(name: string, description: string, run: (args: Record<string, unknown>) => unknown): ToolDefinition {
  return {
    name,
    description,
    inputSchema: { type: 'object', properties: { name: { type: 'string' } } },
    required: [],
    skipJudge: true,
    handler: async (_ctx, args) => ({ ok: true, result: run(args) }),
  };
}
const defs: ToolDefinition[] = [
  def('cmd.run', 'run a command', () => 'ran'),
  def('fs.read', 'read a file', () => 'content'),
  def('orch.cluster.drain', 'drain a node (operators)', () => ({ drained: true })),
  def('orch.schema.get', 'a JSON schema by name', (a) => ({ name: a.name, schema: { type: 'object' } })),
];
const catalog: ToolCatalog = {
  list(ctx): ToolInfo[] {
    return defs.filter((d) => allowed(ctx, d.name)).map((d) => ({ name: d.name, description: d.description, source: 'builtin', skip_judge: d.skipJudge }));
  },
  get: (name) => defs.find((d) => d.name === name),
  async call(ctx, name, args) {
    const d = defs.find((x) => x.name === name);
    if (!d) return { ok: false, error: { error: 'ToolNotFound', message: `no tool ${name}` } };
    if (!allowed(ctx.context, name)) return { ok: false, error: { error: 'ToolNotAllowed', message: `${name} is not allowed in ${ctx.context.name}` } };
    calls.push({ name, origin: ctx.origin, tenantId: ctx.tenantId, subject: ctx.principal.subject });
    return d.handler(ctx, args);
  },
};
// ---- the server ----

let app: FastifyInstance;
let base: string;
let idp: TestIdp;

test.before(async () => {
  idp = await makeTestIdp();
  app = Fastify();
  installErrorHandling(app);
  installAuth(app, createJwtAuthenticator({ jwksFile: idp.jwksFile, issuer: idp.issuer, audience: idp.audience }));
  // The caller context is the node policy's contextForPrincipal (the route's default).
  await registerMcpRoute(app, catalog);
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});

test.after.always(async () => {
  await app?.close();
});

const operatorToken = (): Promise<string> => idp.sign({ sub: 'op1', preferred_username: 'olga', realm_access: { roles: ['operator'] } });
const userToken = (): Promise<string> => idp.sign({ sub: 'u1', preferred_username: 'alice', tenant_id: 'acme' });

async function connect(token: string | undefined): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL('/v1/mcp', base), {
    requestInit: { headers: token ? { authorization: `Bearer ${token}` } : {} },
  });
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

function text(result: unknown): string {
  const r = result as CallToolResult;
  const first = r.content[0];
  return first?.type === 'text' ? first.text : '';
}

test('tools/list shows only the tools the caller context allows, with description and inputSchema', async (t) => {
  const op = await connect(await operatorToken());
  const user = await connect(await userToken());
  try {
    const opTools = (await op.listTools()).tools;
    const userTools = (await user.listTools()).tools;
    t.deepEqual(opTools.map((x) => x.name), ['orch.cluster.drain', 'orch.schema.get']);
    t.deepEqual(userTools.map((x) => x.name), ['orch.schema.get']);
    for (const name of ['fs.read', 'cmd.run']) t.false([...opTools, ...userTools].some((x) => x.name === name), `${name} is not served to external callers`);
    const schemaGet = userTools[0];
    t.is(schemaGet?.description, 'a JSON schema by name');
    t.is(schemaGet?.inputSchema.type, 'object');
    t.deepEqual(schemaGet?.inputSchema.properties, { name: { type: 'string' } });
    t.is(op.getServerVersion()?.name, 'orch');
  } finally {
    await op.close();
    await user.close();
  }
});

test('tools/call runs the tool through the catalog with origin mcp and returns the JSON result as text', async (t) => {
  const user = await connect(await userToken());
  try {
    const result = await user.callTool({ name: 'orch.schema.get', arguments: { name: 'agent' } });
    t.falsy(result.isError);
    t.deepEqual(JSON.parse(text(result)), { name: 'agent', schema: { type: 'object' } });
    t.true(calls.some((c) => c.name === 'orch.schema.get' && c.origin === 'mcp' && c.tenantId === 'acme' && c.subject === 'u1'));
  } finally {
    await user.close();
  }
});

test('a tool outside the caller context is an isError result with the policy error name', async (t) => {
  const user = await connect(await userToken());
  try {
    const denied = await user.callTool({ name: 'orch.cluster.drain', arguments: {} });
    t.true(denied.isError);
    t.regex(text(denied), /^ToolNotAllowed: /);
    const fs = await user.callTool({ name: 'fs.read', arguments: { path: '/etc/passwd' } });
    t.true(fs.isError);
    t.regex(text(fs), /^ToolNotAllowed: /);
    t.false(calls.some((c) => c.name === 'orch.cluster.drain' || c.name === 'fs.read'));
  } finally {
    await user.close();
  }
});

test('without a token (or with a bad one) /v1/mcp answers 401 and the SDK client cannot connect', async (t) => {
  const res = await fetch(`${base}/v1/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
  t.is(res.status, 401);
  await t.throwsAsync(connect(undefined));
  const other = await makeTestIdp();
  await t.throwsAsync(connect(await other.sign({ sub: 'mallory' })));
});

test('GET and DELETE answer 405: the endpoint is stateless', async (t) => {
  const token = await userToken();
  for (const method of ['GET', 'DELETE']) {
    const res = await fetch(`${base}/v1/mcp`, { method, headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
    t.is(res.status, 405, method);
  }
});

test('orch mcp proxy: a stdio-side client sees the same tools and results as the HTTP caller', async (t) => {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const proxy = await runProxy({ url: base, token: await userToken() }, serverSide);
  const client = new Client({ name: 'desktop', version: '1.0.0' });
  await client.connect(clientSide);
  try {
    t.deepEqual((await client.listTools()).tools.map((x) => x.name), ['orch.schema.get']);
    const ok = await client.callTool({ name: 'orch.schema.get', arguments: { name: 'workflow' } });
    t.deepEqual(JSON.parse(text(ok)), { name: 'workflow', schema: { type: 'object' } });
    const denied = await client.callTool({ name: 'orch.cluster.drain', arguments: {} });
    t.true(denied.isError);
    t.regex(text(denied), /^ToolNotAllowed: /);
  } finally {
    await client.close();
    await proxy.closed;
  }
  await t.throwsAsync(runProxy({ url: base, token: 'not.a.jwt' }, InMemoryTransport.createLinkedPair()[1]));
});

test('orch mcp on real stdio: a desktop client launches the command and calls a tool', async (t) => {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  env.ORCH_TOKEN = await userToken();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import=tsx', 'src/cli/main.ts', 'mcp', '--url', base],
    env,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'desktop', version: '1.0.0' });
  await client.connect(transport);
  try {
    t.deepEqual((await client.listTools()).tools.map((x) => x.name), ['orch.schema.get']);
    const ok = await client.callTool({ name: 'orch.schema.get', arguments: { name: 'node' } });
    t.deepEqual(JSON.parse(text(ok)), { name: 'node', schema: { type: 'object' } });
  } finally {
    await client.close();
  }
});
