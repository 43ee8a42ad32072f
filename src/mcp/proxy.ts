// `orch mcp`: the node's /v1/mcp re-served on stdio for desktop MCP clients. The stdio side is a plain MCP server
// whose tools/list and tools/call are forwarded to a running node over Streamable HTTP with the caller's bearer
// token, so the node does everything that matters (token verification, the caller's security context, policy,
// the catalog). A bad token fails at connect time with the node's 401.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { MCP_SERVER_NAME, MCP_SERVER_VERSION } from './server.ts';

export interface ProxyTarget {
  /** The node's HTTP base address (`http://127.0.0.1:8080`). */
  url: string;
  token: string;
}

/** An MCP client connected to the node's /v1/mcp with `token`; rejects when the node refuses it. */
export async function connectToNode(target: ProxyTarget): Promise<Client> {
  const endpoint = new URL('/v1/mcp', `${target.url.replace(/\/+$/, '')}/`);
  const transport = new StreamableHTTPClientTransport(endpoint, {
    requestInit: { headers: { authorization: `Bearer ${target.token}` } },
  });
  const client = new Client({ name: 'orch-mcp-proxy', version: MCP_SERVER_VERSION });
  await client.connect(transport);
  return client;
}

/** An MCP server that forwards tools/list and tools/call to `upstream`. */
export function createProxyServer(upstream: Client): McpServer {
  const mcp = new McpServer({ name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION }, { capabilities: { tools: { listChanged: false } } });
  mcp.server.setRequestHandler(ListToolsRequestSchema, (request, extra) => upstream.listTools(request.params, { signal: extra.signal }));
  mcp.server.setRequestHandler(CallToolRequestSchema, (request, extra) => upstream.callTool(request.params, undefined, { signal: extra.signal }));
  return mcp;
}

/** Connects to the node, then serves on `downstream` (stdio for `orch mcp`) until either side closes. */
export async function runProxy(target: ProxyTarget, downstream: Transport): Promise<{ closed: Promise<void> }> {
  const upstream = await connectToNode(target);
  const server = createProxyServer(upstream);
  let done!: () => void;
  const closed = new Promise<void>((resolve) => {
    done = resolve;
  });
  server.server.onclose = () => {
    void upstream.close().catch(() => undefined).finally(done);
  };
  await server.connect(downstream);
  return { closed };
}
