// /v1/mcp over the real tool catalog and the real node policy: operators and plain users see different tool sets,
// fs/cmd are absent for external callers without a volume, and a management tool answers through MCP.
import test from 'ava';
import Fastify, { type FastifyInstance } from 'fastify';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createJwtAuthenticator } from '../../src/auth/jwt-authenticator.ts';
import { loadNodeConfig } from '../../src/config/load.ts';
import { installAuth } from '../../src/gateway/http/auth-hook.ts';
import { installErrorHandling } from '../../src/gateway/http/errors.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { registerMcpRoute } from '../../src/mcp/http.ts';
import { createToolCatalog } from '../../src/tools/catalog.ts';
import { makeTestIdp, type TestIdp } from '../support/jwks.ts';

let app: FastifyInstance;
let base: string;
let idp: TestIdp;

test.before(async () => {
  idp = await makeTestIdp();
  const catalog = createToolCatalog({ config: loadNodeConfig({ env: {}, overrides: {} }), logger: silentLogger() });
  app = Fastify();
  installErrorHandling(app);
  installAuth(app, createJwtAuthenticator({ jwksFile: idp.jwksFile, issuer: idp.issuer, audience: idp.audience }));
  await registerMcpRoute(app, catalog);
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});

test.after.always(async () => {
  await app?.close();
});

async function connect(claims: Record<string, unknown>): Promise<Client> {
  const token = await idp.sign(claims);
  const client = new Client({ name: 'mcp-catalog-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/v1/mcp', base), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

test('operators and users see different tool sets from the real catalog; no fs/cmd without a volume', async (t) => {
  const op = await connect({ sub: 'op1', realm_access: { roles: ['operator'] } });
  const user = await connect({ sub: 'u1', tenant_id: 'acme' });
  try {
    const opNames = (await op.listTools()).tools.map((x) => x.name);
    const userTools = (await user.listTools()).tools;
    const userNames = userTools.map((x) => x.name);
    t.true(userNames.includes('orch.tools.list'));
    t.true(opNames.length > userNames.length, 'operators see more');
    for (const n of userNames) t.true(opNames.includes(n), `${n} is an operator tool too`);
    t.false([...opNames, ...userNames].some((n) => n.startsWith('fs.') || n.startsWith('cmd.')));
    for (const tool of userTools) {
      t.true(tool.description !== undefined && tool.description.length > 0, tool.name);
      t.is(tool.inputSchema.type, 'object', tool.name);
    }

    const listed = (await user.callTool({ name: 'orch.tools.list', arguments: {} })) as CallToolResult;
    t.falsy(listed.isError);
    const first = listed.content[0];
    t.is(first?.type, 'text');
    t.true(first?.type === 'text' && first.text.includes('orch.tools.list'));

    const outside = opNames.find((n) => !userNames.includes(n));
    t.truthy(outside);
    const denied = (await user.callTool({ name: outside!, arguments: {} })) as CallToolResult;
    t.true(denied.isError);
    const d = denied.content[0];
    t.true(d?.type === 'text' && /^\w+: /.test(d.text), JSON.stringify(denied));
  } finally {
    await op.close();
    await user.close();
  }
});
