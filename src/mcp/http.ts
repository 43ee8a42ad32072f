// MCP over Streamable HTTP at /v1/mcp (issue 4, part 5). The node's auth hook has already verified the bearer
// token and put the principal on the request (everything under /v1 is authenticated), so a request without a
// valid token never reaches this handler (401). Stateless: every POST gets a fresh server and transport bound to
// the caller's principal and security context, answers with JSON, and both are closed when the response ends.
// No sessions are needed because the catalog holds no per-client state and there are no server-initiated
// messages; GET (a standalone SSE stream) and DELETE (session end) therefore answer 405.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, InitializeRequestSchema, ListToolsRequestSchema, PingRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../auth/principal.ts';
import { principalOf } from '../gateway/http/auth-hook.ts';
import { contextForPrincipal } from '../tools/policy.ts';
import type { SecurityContext, ToolCatalog } from '../tools/types.ts';
import { createMcpServer, type McpCallerContext } from './server.ts';

export const MCP_PATH = '/v1/mcp';

export interface McpRouteOptions {
  /** The caller's security context; default the node policy's `contextForPrincipal`. */
  contextFor?: (principal: Principal) => SecurityContext;
}

/** The call context of an external MCP caller: its principal and tenant, no execution, no volumes, no sandbox. */
export function mcpCallerFor(principal: Principal, contextFor: (principal: Principal) => SecurityContext): McpCallerContext {
  return { principal, tenantId: principal.tenantId, context: contextFor(principal) };
}

/** The request schemas of the methods this server answers; other methods get the SDK's "method not found". */
const REQUEST_SCHEMAS: Record<string, { safeParse(v: unknown): { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } } }> = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
};

/**
 * A single JSON-RPC request whose params do not fit its method's schema → a clean -32602 (invalid params) naming the
 * field. The SDK would parse it inside its dispatcher and answer -32603 (internal error) with the validator's raw
 * dump; a caller's mistake is not our internal error.
 */
export function invalidParams(body: unknown): { id: unknown; message: string } | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const msg = body as { method?: unknown; id?: unknown };
  if (typeof msg.method !== 'string' || msg.id === undefined) return undefined;
  const schema = REQUEST_SCHEMAS[msg.method];
  if (!schema) return undefined;
  const parsed = schema.safeParse(body);
  if (parsed.success) return undefined;
  const issue = parsed.error?.issues[0];
  const where = issue && issue.path.length > 0 ? issue.path.map(String).join('.') : 'params';
  return { id: msg.id, message: `invalid params for ${msg.method}: ${where}: ${issue?.message ?? 'invalid'}` };
}

function jsonRpcError(reply: FastifyReply, status: number, code: number, message: string): FastifyReply {
  return reply.status(status).header('content-type', 'application/json').send({ jsonrpc: '2.0', error: { code, message }, id: null });
}

export async function registerMcpRoute(app: FastifyInstance, catalog: ToolCatalog, options: McpRouteOptions = {}): Promise<void> {
  const contextFor = options.contextFor ?? ((principal: Principal) => contextForPrincipal(principal));

  app.post(MCP_PATH, async (request: FastifyRequest, reply: FastifyReply) => {
    const caller = mcpCallerFor(principalOf(request), contextFor);
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
