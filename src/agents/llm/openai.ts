// OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, LM Studio, …) through the official SDK, translated to
// and from our LlmRequest/LlmResponse.
import OpenAI from 'openai';
import type { LlmMessage, LlmProvider, LlmRequest, LlmResponse, LlmToolCall } from './types.ts';

type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

function toWire(m: LlmMessage): ChatMessage {
  switch (m.role) {
    case 'system':
    case 'user':
      return { role: m.role, content: m.content };
    case 'tool':
      return { role: 'tool', tool_call_id: m.tool_call_id, content: m.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: m.content,
        ...(m.tool_calls?.length
          ? {
              tool_calls: m.tool_calls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: JSON.stringify(c.arguments) },
              })),
            }
          : {}),
      };
  }
}

function parseArguments(raw: string): Record<string, unknown> {
  try {
    const v = JSON.parse(raw || '{}') as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { _raw: raw };
  } catch {
    return { _raw: raw };
  }
}

export class OpenAiProvider implements LlmProvider {
  private readonly client: OpenAI;

  constructor(
    readonly name: string,
    opts: { endpoint?: string | undefined; apiKey?: string | undefined },
  ) {
    this.client = new OpenAI({
      // Local servers (vLLM, Ollama) want no key; the SDK insists on one.
      apiKey: opts.apiKey || 'not-needed',
      ...(opts.endpoint ? { baseURL: opts.endpoint } : {}),
      maxRetries: 0,
      timeout: 10 * 60 * 1000,
    });
  }

  async complete(model: string, req: LlmRequest): Promise<LlmResponse> {
    const res = await this.client.chat.completions.create(
      {
        model,
        messages: req.messages.map(toWire),
        ...(req.tools.length
          ? { tools: req.tools.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.parameters } })) }
          : {}),
        ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
      },
      { ...(req.signal ? { signal: req.signal } : {}) },
    );
    const choice = res.choices[0];
    const calls: LlmToolCall[] = (choice?.message.tool_calls ?? [])
      .filter((c): c is Extract<typeof c, { type: 'function' }> => c.type === 'function')
      .map((c) => ({ id: c.id, name: c.function.name, arguments: parseArguments(c.function.arguments) }));
    return {
      content: choice?.message.content ?? null,
      tool_calls: calls,
      finish_reason: choice?.finish_reason ?? 'unknown',
      usage: { prompt_tokens: res.usage?.prompt_tokens ?? 0, completion_tokens: res.usage?.completion_tokens ?? 0 },
      provider: this.name,
      model: res.model || model,
    };
  }
}
