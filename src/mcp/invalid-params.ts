// The params check of /v1/mcp (http.ts): a caller's malformed request answered -32602 naming the field, before the
// SDK sees it. Its own module because the SDK's request schemas (zod) are loaded only with the first MCP request.
import { CallToolRequestSchema, InitializeRequestSchema, ListToolsRequestSchema, PingRequestSchema } from '@modelcontextprotocol/sdk/types.js';

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
