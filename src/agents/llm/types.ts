// One interface over every LLM backend (OpenAI-compatible chat completions, Anthropic messages). The execution
// loop speaks only this; providers translate. Messages follow the OpenAI chat shape, the lingua franca here.

export interface LlmToolCall {
  id: string;
  name: string;
  /** The arguments as the model produced them, parsed from JSON (an unparseable string is kept under `_raw`). */
  arguments: Record<string, unknown>;
}

export type LlmMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: LlmToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface LlmToolDef {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

export interface LlmRequest {
  /** The alias from the agent manifest (`spec.runtime.model`); the registry resolves it to a provider and model. */
  alias: string;
  messages: LlmMessage[];
  tools: LlmToolDef[];
  temperature?: number;
  /** Upper bound of generated tokens (Anthropic requires one: 4096 when absent; OpenAI-compatible: server default). */
  max_tokens?: number;
  /** Aborts the request (llm_timeout_seconds, cancel). */
  signal?: AbortSignal;
}

export interface LlmUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

export interface LlmResponse {
  content: string | null;
  tool_calls: LlmToolCall[];
  finish_reason: string;
  usage: LlmUsage;
  /** provider name and concrete model that answered */
  provider: string;
  model: string;
}

/** A resolved backend: one provider entry of the node config. */
export interface LlmProvider {
  readonly name: string;
  complete(model: string, req: LlmRequest): Promise<LlmResponse>;
}

/** Resolves aliases across all configured providers. */
export interface LlmRegistry {
  /** Throws OrchError CONFIG_INVALID (`no LLM provider configured for alias "<alias>"`) when unknown. */
  complete(req: LlmRequest): Promise<LlmResponse>;
  hasAlias(alias: string): boolean;
}
