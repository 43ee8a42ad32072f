// OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, LM Studio, …), translated to and from our
// LlmRequest/LlmResponse. The wire types are the official SDK's; the call itself is one JSON POST (json-post.ts), not
// the SDK's client, which cost ~5x the CPU per call (issue 24). retry.ts is the one retry policy, and nothing is read
// from the environment here: endpoint and key come from the node config only.
import { randomUUID } from 'node:crypto';
import type OpenAI from 'openai';
import { JsonPoster } from './json-post.ts';
import type { LlmMessage, LlmProvider, LlmRequest, LlmResponse, LlmToolCall } from './types.ts';

type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type ChatCompletion = OpenAI.Chat.Completions.ChatCompletion;

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
  /** No answer for this long ends a call as a retryable timeout (default 10 min); callers normally bound calls with the request's signal. */
  timeoutMs?: number;
}

export class OpenAiProvider implements LlmProvider {
  private readonly poster = new JsonPoster();
  private readonly url: URL;
  private readonly headers: Record<string, string>;

  constructor(
    readonly name: string,
    private readonly opts: OpenAiProviderOptions = {},
  ) {
    // As the SDK joins its baseURL and a path: `<endpoint>/chat/completions`, one slash between them.
    this.url = new URL(`${(opts.endpoint || OPENAI_DEFAULT_ENDPOINT).replace(/\/+$/, '')}/chat/completions`);
    this.headers = { authorization: `Bearer ${opts.apiKey || PLACEHOLDER_API_KEY}`, 'user-agent': 'orch' };
  }

  async complete(model: string, req: LlmRequest): Promise<LlmResponse> {
    const body = {
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
    };
    const res = (await this.poster.post(this.url, body, {
      headers: this.headers,
      signal: req.signal,
      idleTimeoutMs: this.opts.timeoutMs ?? 10 * 60 * 1000,
    })) as Partial<ChatCompletion> | null;
    const choice = res?.choices?.[0];
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
      usage: { prompt_tokens: res?.usage?.prompt_tokens ?? 0, completion_tokens: res?.usage?.completion_tokens ?? 0 },
      provider: this.name,
      model: res?.model || model,
    };
  }

  /** Drops the idle keep-alive connections. */
  close(): void {
    this.poster.close();
  }
}
