// Anthropic messages through the official SDK: the system message goes to `system`, assistant tool calls become
// `tool_use` blocks, tool results `tool_result` blocks in a user turn (consecutive ones merged, as the API wants).
import Anthropic from '@anthropic-ai/sdk';
import type { LlmMessage, LlmProvider, LlmRequest, LlmResponse, LlmToolCall } from './types.ts';

type Msg = Anthropic.MessageParam;
type Block = Anthropic.ContentBlockParam;

function toWire(messages: LlmMessage[]): { system: string; messages: Msg[] } {
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

export class AnthropicProvider implements LlmProvider {
  private readonly client: Anthropic;

  constructor(
    readonly name: string,
    opts: { endpoint?: string | undefined; apiKey?: string | undefined },
  ) {
    this.client = new Anthropic({ apiKey: opts.apiKey ?? null, ...(opts.endpoint ? { baseURL: opts.endpoint } : {}), maxRetries: 0 });
  }

  async complete(model: string, req: LlmRequest): Promise<LlmResponse> {
    const wire = toWire(req.messages);
    const res = await this.client.messages.create(
      {
        model,
        max_tokens: 4096,
        messages: wire.messages,
        ...(wire.system ? { system: wire.system } : {}),
        ...(req.tools.length
          ? { tools: req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters as Anthropic.Tool.InputSchema })) }
          : {}),
        ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
      },
      { ...(req.signal ? { signal: req.signal } : {}) },
    );
    const text = res.content
      .filter((b): b is Anthropic.TextBlock => b.type === 'text')
      .map((b) => b.text)
      .join('');
    const calls: LlmToolCall[] = res.content
      .filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')
      .map((b) => ({ id: b.id, name: b.name, arguments: (b.input ?? {}) as Record<string, unknown> }));
    return {
      content: text || null,
      tool_calls: calls,
      finish_reason: res.stop_reason ?? 'unknown',
      usage: { prompt_tokens: res.usage.input_tokens, completion_tokens: res.usage.output_tokens },
      provider: this.name,
      model: res.model || model,
    };
  }
}
