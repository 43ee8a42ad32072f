// Anthropic messages through the official SDK: system messages go to `system`, assistant tool calls become
// `tool_use` blocks, tool results `tool_result` blocks in a user turn (consecutive same-role turns merged, as the API
// wants). Answers come back in our OpenAI shape, with stop reasons in the OpenAI vocabulary (tool_use → tool_calls,
// end_turn → stop, max_tokens → length). Nothing is read from the environment: an explicit key (a placeholder when
// the config has none) keeps the SDK from looking for local credentials.
import type Anthropic from '@anthropic-ai/sdk';
import { loadAnthropic } from './sdks.ts';
import type { LlmMessage, LlmProvider, LlmRequest, LlmResponse, LlmToolCall } from './types.ts';

type Msg = Anthropic.MessageParam;
type Block = Anthropic.ContentBlockParam;

export const ANTHROPIC_DEFAULT_ENDPOINT = 'https://api.anthropic.com';
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

export function toAnthropicMessages(messages: LlmMessage[]): { system: string; messages: Msg[] } {
  const system: string[] = [];
  const out: Msg[] = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]): void => {
    const last = out[out.length - 1];
    if (last && last.role === role && Array.isArray(last.content)) (last.content as Block[]).push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        system.push(m.content);
        break;
      case 'user':
        push('user', [{ type: 'text', text: m.content }]);
        break;
      case 'tool':
        push('user', [{ type: 'tool_result', tool_use_id: m.tool_call_id, content: m.content }]);
        break;
      case 'assistant': {
        const blocks: Block[] = [];
        if (m.content) blocks.push({ type: 'text', text: m.content });
        for (const c of m.tool_calls ?? []) blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments });
        if (blocks.length) push('assistant', blocks);
        break;
      }
    }
  }
  return { system: system.join('\n\n'), messages: out };
}

const STOP_REASONS: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  refusal: 'content_filter',
};

/** The SDK appends `/v1/messages` itself; accept an endpoint written with or without the `/v1`. */
function baseUrl(endpoint: string | undefined): string {
  return (endpoint || ANTHROPIC_DEFAULT_ENDPOINT).replace(/\/+$/, '').replace(/\/v1$/, '');
}

export interface AnthropicProviderOptions {
  endpoint?: string | undefined;
  apiKey?: string | undefined;
  timeoutMs?: number;
}

export class AnthropicProvider implements LlmProvider {
  private client: Promise<Anthropic> | undefined;

  constructor(
    readonly name: string,
    private readonly opts: AnthropicProviderOptions = {},
  ) {}

  /** Made on the first call: the SDK loads lazily (sdks.ts). */
  private sdkClient(): Promise<Anthropic> {
    return (this.client ??= loadAnthropic().then(
      (AnthropicSdk) =>
        new AnthropicSdk({
          apiKey: this.opts.apiKey || 'not-needed',
          baseURL: baseUrl(this.opts.endpoint),
          maxRetries: 0,
          timeout: this.opts.timeoutMs ?? 10 * 60 * 1000,
        }),
    ));
  }

  async complete(model: string, req: LlmRequest): Promise<LlmResponse> {
    const wire = toAnthropicMessages(req.messages);
    const client = await this.sdkClient();
    const res = await client.messages.create(
      {
        model,
        max_tokens: req.max_tokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
        messages: wire.messages,
        ...(wire.system ? { system: wire.system } : {}),
        ...(req.tools.length
          ? {
              tools: req.tools.map((t) => ({
                name: t.name,
                description: t.description,
                input_schema: { type: 'object', ...t.parameters } as Anthropic.Tool.InputSchema,
              })),
            }
          : {}),
        // Anthropic's range is 0..1 where OpenAI's is 0..2.
        ...(req.temperature !== undefined ? { temperature: Math.min(1, Math.max(0, req.temperature)) } : {}),
      },
      req.signal ? { signal: req.signal } : {},
    );
    const text = res.content
      .filter((b): b is Anthropic.TextBlock => b.type === 'text')
      .map((b) => b.text)
      .join('');
    const calls: LlmToolCall[] = res.content
      .filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')
      .map((b) => ({
        id: b.id,
        name: b.name,
        arguments: b.input && typeof b.input === 'object' && !Array.isArray(b.input) ? (b.input as Record<string, unknown>) : { _raw: b.input },
      }));
    const stop = res.stop_reason ?? (calls.length ? 'tool_use' : 'end_turn');
    return {
      content: text || null,
      tool_calls: calls,
      finish_reason: STOP_REASONS[stop] ?? stop,
      usage: {
        // Cached prompt tokens are counted apart by Anthropic; they are still prompt tokens.
        prompt_tokens: (res.usage?.input_tokens ?? 0) + (res.usage?.cache_creation_input_tokens ?? 0) + (res.usage?.cache_read_input_tokens ?? 0),
        completion_tokens: res.usage?.output_tokens ?? 0,
      },
      provider: this.name,
      model: res.model || model,
    };
  }
}
