// OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, LM Studio, …) through the official SDK, translated to
// and from our LlmRequest/LlmResponse. The SDK's own retries are off (retry.ts is the one policy), and nothing is read
// from the environment here: endpoint and key come from the node config only.
import { randomUUID } from 'node:crypto';
import type OpenAI from 'openai';
import { loadOpenAi } from './sdks.ts';
import type { LlmMessage, LlmProvider, LlmRequest, LlmResponse, LlmToolCall } from './types.ts';

type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

export const OPENAI_DEFAULT_ENDPOINT = 'https://api.openai.com/v1';
/** Local servers (vLLM, Ollama, LM Studio) want no key; the SDK insists on one. */
export const PLACEHOLDER_API_KEY = 'not-needed';

export function toOpenAiMessage(m: LlmMessage): ChatMessage {
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
                // A call whose arguments never parsed goes back exactly as the model wrote it.
                function: { name: c.name, arguments: rawArguments(c.arguments) },
              })),
            }
          : {}),
      };
  }
}

function rawArguments(args: Record<string, unknown>): string {
  const keys = Object.keys(args);
  if (keys.length === 1 && keys[0] === '_raw' && typeof args._raw === 'string') return args._raw;
  return JSON.stringify(args);
}

/** Tool-call arguments as an object; anything that is not a JSON object is kept verbatim under `_raw`. */
export function parseToolArguments(raw: unknown): Record<string, unknown> {
  // Some compatible servers hand back an object rather than a JSON string.
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) return raw as Record<string, unknown>;
  if (typeof raw !== 'string') return raw === undefined || raw === null ? {} : { _raw: raw };
  if (raw.trim() === '') return {};
  try {
    const v = JSON.parse(raw) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { _raw: raw };
  } catch {
    return { _raw: raw };
  }
}

export interface OpenAiProviderOptions {
  endpoint?: string | undefined;
  apiKey?: string | undefined;
  /** Per-request timeout of the SDK (default 10 min); callers normally bound calls with the request's signal. */
  timeoutMs?: number;
}

export class OpenAiProvider implements LlmProvider {
  private client: Promise<OpenAI> | undefined;

  constructor(
    readonly name: string,
    private readonly opts: OpenAiProviderOptions = {},
  ) {}

  /** Made on the first call: the SDK loads lazily (sdks.ts). */
  private sdkClient(): Promise<OpenAI> {
    return (this.client ??= loadOpenAi().then(
      (OpenAiSdk) =>
        new OpenAiSdk({
          apiKey: this.opts.apiKey || PLACEHOLDER_API_KEY,
          baseURL: this.opts.endpoint || OPENAI_DEFAULT_ENDPOINT,
          organization: null,
          project: null,
          maxRetries: 0,
          timeout: this.opts.timeoutMs ?? 10 * 60 * 1000,
        }),
    ));
  }

  async complete(model: string, req: LlmRequest): Promise<LlmResponse> {
    const client = await this.sdkClient();
    const res = await client.chat.completions.create(
      {
        model,
        messages: req.messages.map(toOpenAiMessage),
        ...(req.tools.length
          ? {
              tools: req.tools.map((t) => ({
                type: 'function' as const,
                function: { name: t.name, description: t.description, parameters: t.parameters },
              })),
            }
          : {}),
        ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
        ...(req.max_tokens !== undefined ? { max_tokens: req.max_tokens } : {}),
      },
      req.signal ? { signal: req.signal } : {},
    );
    const choice = res.choices?.[0];
    const calls: LlmToolCall[] = (choice?.message?.tool_calls ?? [])
      .filter((c): c is Extract<typeof c, { type: 'function' }> => c.type === 'function' || (c.type as unknown) === undefined)
      .map((c) => ({
        id: c.id || `call_${randomUUID()}`,
        name: c.function.name,
        arguments: parseToolArguments(c.function.arguments as unknown),
      }));
    return {
      content: choice?.message?.content ?? null,
      tool_calls: calls,
      finish_reason: choice?.finish_reason ?? (calls.length ? 'tool_calls' : 'stop'),
      usage: { prompt_tokens: res.usage?.prompt_tokens ?? 0, completion_tokens: res.usage?.completion_tokens ?? 0 },
      provider: this.name,
      model: res.model || model,
    };
  }
}
