// MCP over Streamable HTTP at /v1/mcp (issue 4, part 5). The node's auth hook has already verified the bearer
// token and put the principal on the request (everything under /v1 is authenticated), so a request without a
// valid token never reaches this handler (401). Stateless: every POST gets a fresh server and transport bound to
// the caller's principal and security context, answers with JSON, and both are closed when the response ends.
// No sessions are needed because the catalog holds no per-client state and there are no server-initiated
// messages; GET (a standalone SSE stream) and DELETE (session end) therefore answer 405.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../auth/principal.ts';
import { principalOf } from '../gateway/http/auth-hook.ts';
import { contextForPrincipal } from '../tools/policy.ts';
import type { SecurityContext, ToolCatalog } from '../tools/types.ts';
import type { McpCallerContext } from './server.ts';

export const MCP_PATH = '/v1/mcp';

export interface McpRouteOptions {
  /** The caller's security context; default the node policy's `contextForPrincipal`. */
  contextFor?: (principal: Principal) => SecurityContext;
}

/** The call context of an external MCP caller: its principal and tenant, no execution, no volumes, no sandbox. */
export function mcpCallerFor(principal: Principal, contextFor: (principal: Principal) => SecurityContext): McpCallerContext {
  return { principal, tenantId: principal.tenantId, context: contextFor(principal) };
}

function jsonRpcError(reply: FastifyReply, status: number, code: number, message: string): FastifyReply {
  return reply.status(status).header('content-type', 'application/json').send({ jsonrpc: '2.0', error: { code, message }, id: null });
}

/**
 * The MCP SDK (with zod, ~300 modules) is loaded by the first MCP request, not at the node's start (issue 15 item 4):
 * most nodes are never asked.
 */
let sdkParts: Promise<[typeof import('./invalid-params.ts'), typeof import('./server.ts'), typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js')]> | undefined;
function loadSdkParts(): NonNullable<typeof sdkParts> {
  return (sdkParts ??= Promise.all([import('./invalid-params.ts'), import('./server.ts'), import('@modelcontextprotocol/sdk/server/streamableHttp.js')]));
}

export async function registerMcpRoute(app: FastifyInstance, catalog: ToolCatalog, options: McpRouteOptions = {}): Promise<void> {
  const contextFor = options.contextFor ?? ((principal: Principal) => contextForPrincipal(principal));

  app.post(MCP_PATH, async (request: FastifyRequest, reply: FastifyReply) => {
    const caller = mcpCallerFor(principalOf(request), contextFor);
    const [{ invalidParams }, { createMcpServer }, { StreamableHTTPServerTransport }] = await loadSdkParts();
    const bad = invalidParams(request.body);
    if (bad) return reply.status(200).header('content-type', 'application/json').send({ jsonrpc: '2.0', error: { code: -32602, message: bad.message }, id: bad.id });
    const server = createMcpServer(catalog, caller);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    // From here on the SDK writes the response on the raw socket; fastify stays out of it.
    reply.hijack();
    reply.raw.setHeader('x-request-id', request.id);
    reply.raw.on('close', () => {
      void transport.close().catch(() => undefined);
      void server.close().catch(() => undefined);
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    } catch (err) {
      request.log.error({ err }, 'mcp request failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json' });
        reply.raw.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'internal error' }, id: null }));
      } else if (!reply.raw.writableEnded) {
        reply.raw.end();
      }
    }
  });

  for (const method of ['GET', 'DELETE'] as const) {
    app.route({
      method,
      url: MCP_PATH,
      handler: async (_request, reply) =>
        jsonRpcError(reply.header('allow', 'POST'), 405, -32000, 'method not allowed: this MCP endpoint is stateless (POST only, no sessions)'),
    });
  }
}
