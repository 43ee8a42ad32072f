// The tool catalog as an MCP server (issue 4, part 5). One server per caller: `tools/list` shows the tools the
// caller's security context allows (name, description, JSON Schema of the arguments) and `tools/call` goes through
// ToolCatalog.call with origin 'mcp', so validation and policy are the catalog's, exactly as for every other caller.
// The transport (Streamable HTTP in ./http.ts) is attached by the caller.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ToolCallContext, ToolCatalog, ToolOutcome } from '../tools/types.ts';

export const MCP_SERVER_NAME = 'orch';
export const MCP_SERVER_VERSION = '0.1.0';

/** What a call needs about its caller; `origin` is always 'mcp' and the abort signal is the request's. */
export type McpCallerContext = Omit<ToolCallContext, 'origin' | 'signal'>;

/** The MCP shape of a catalog outcome: errors as `isError` with "Name: message", results as JSON text. */
export function outcomeToResult(outcome: ToolOutcome): CallToolResult {
  if (!outcome.ok) {
    return { isError: true, content: [{ type: 'text', text: `${outcome.error.error}: ${outcome.error.message}` }] };
  }
  const text = outcome.result === undefined ? 'null' : JSON.stringify(outcome.result, null, 2);
  return { content: [{ type: 'text', text }] };
}

/** MCP requires an object schema for a tool's input; the catalog's schemas are, but never serve anything else. */
function inputSchemaOf(schema: Record<string, unknown> | undefined): Tool['inputSchema'] {
  if (schema && schema.type === 'object') return schema as Tool['inputSchema'];
  return { type: 'object', properties: {} };
}

/**
 * An MCP server over `catalog` for one caller. Uses the SDK's low-level request handlers (on McpServer's underlying
 * Server) because the catalog's tools carry JSON Schemas, not zod schemas.
 */
export function createMcpServer(catalog: ToolCatalog, caller: McpCallerContext): McpServer {
  const mcp = new McpServer({ name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION }, { capabilities: { tools: { listChanged: false } } });
  mcp.server.setRequestHandler(ListToolsRequestSchema, () => {
    const tools: Tool[] = [];
    for (const info of catalog.list(caller.context)) {
      const def = catalog.get(info.name);
      tools.push({ name: info.name, description: def?.description ?? info.description, inputSchema: inputSchemaOf(def?.inputSchema) });
    }
    return { tools };
  });
  mcp.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    const outcome = await catalog.call({ ...caller, origin: 'mcp', signal: extra.signal }, request.params.name, args);
    return outcomeToResult(outcome);
  });
  return mcp;
}
