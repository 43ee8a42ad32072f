// A scripted Anthropic Messages server for tests: real HTTP on 127.0.0.1:0 speaking `POST /v1/messages`
// (non-streaming) well enough for `@anthropic-ai/sdk`. Same scripts, replies and failure injection as
// scripted-llm.ts; a reply's tool calls become `tool_use` blocks and its content a `text` block.
import {
  startScriptedServer,
  type Script,
  type ScriptedDialect,
  type ScriptedServer,
  type ScriptedServerOptions,
} from './scripted-llm.ts';

export type AnthropicBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: unknown; is_error?: boolean };

export interface MessagesRequest {
  model: string;
  max_tokens: number;
  system?: string | { type: 'text'; text: string }[];
  messages: { role: 'user' | 'assistant'; content: string | AnthropicBlock[] }[];
  tools?: { name: string; description?: string; input_schema: unknown }[];
  temperature?: number;
  [key: string]: unknown;
}

export type ScriptedAnthropic = ScriptedServer<MessagesRequest>;

const STOP: Record<string, string> = { stop: 'end_turn', tool_calls: 'tool_use', length: 'max_tokens' };

const anthropicDialect: ScriptedDialect<MessagesRequest> = {
  accepts: (method, path) => method === 'POST' && path.endsWith('/v1/messages'),
  error: (status, message) => ({
    type: 'error',
    error: { type: status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error', message },
  }),
  url: (origin) => origin,
  render(reply, body, ctx) {
    const content: AnthropicBlock[] = [];
    if (reply.content) content.push({ type: 'text', text: reply.content });
    for (const c of reply.tool_calls ?? []) {
      content.push({
        type: 'tool_use',
        id: c.id ?? `toolu_${ctx.nextCallId()}`,
        name: c.name,
        input: typeof c.arguments === 'string' ? (JSON.parse(c.arguments) as unknown) : c.arguments,
      });
    }
    const hasTools = (reply.tool_calls ?? []).length > 0;
    return {
      id: `msg_scripted_${ctx.seq}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content,
      stop_reason: reply.finish_reason ? (STOP[reply.finish_reason] ?? reply.finish_reason) : hasTools ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: reply.usage?.prompt_tokens ?? 10, output_tokens: reply.usage?.completion_tokens ?? 5 },
    };
  },
};

/** Starts the scripted Anthropic server; `url` is the origin (the SDK appends /v1/messages). */
export function startScriptedAnthropic(script: Script<MessagesRequest>, opts: ScriptedServerOptions<MessagesRequest> = {}): Promise<ScriptedAnthropic> {
  return startScriptedServer(anthropicDialect, script, opts);
}

/** Whether the conversation already carries a tool result (the usual "second turn" test). */
export function hasToolResult(body: MessagesRequest): boolean {
  return body.messages.some((m) => Array.isArray(m.content) && m.content.some((b) => b.type === 'tool_result'));
}
