// Model aliases across the configured providers (CONTRACT.md llm_providers): the first provider that declares an
// alias serves it; a concrete model name of a provider resolves too. Unknown aliases fail with the sentence users
// see on the execution.
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { LlmProviderConfig } from '../../config/types.ts';
import type { Logger } from '../../logging/logger.ts';
import { AnthropicProvider } from './anthropic.ts';
import { OpenAiProvider } from './openai.ts';
import { DEFAULT_LLM_RETRY, withLlmRetry, type LlmRetryOptions } from './retry.ts';
import type { LlmProvider, LlmRegistry, LlmRequest, LlmResponse } from './types.ts';

export function noProviderMessage(alias: string): string {
  return `no LLM provider configured for alias "${alias}"`;
}

function providerOf(cfg: LlmProviderConfig): LlmProvider {
  const opts = { endpoint: cfg.endpoint, apiKey: cfg.api_key };
  return cfg.type === 'anthropic' ? new AnthropicProvider(cfg.name, opts) : new OpenAiProvider(cfg.name, opts);
}

export function createLlmRegistry(configs: LlmProviderConfig[], logger: Logger, options: { retry?: LlmRetryOptions } = {}): LlmRegistry {
  const routes = new Map<string, { provider: LlmProvider; model: string }>();
  for (const cfg of configs) {
    const provider = providerOf(cfg);
    for (const m of cfg.models) if (!routes.has(m.alias)) routes.set(m.alias, { provider, model: m.model });
  }
  for (const cfg of configs) {
    const provider = providerOf(cfg);
    for (const m of cfg.models) if (!routes.has(m.model)) routes.set(m.model, { provider, model: m.model });
  }
  const log = logger.child({ component: 'llm' });
  return {
    hasAlias: (alias) => routes.has(alias),
    async complete(req: LlmRequest): Promise<LlmResponse> {
      const route = routes.get(req.alias);
      if (!route) throw new OrchError(Errors.CONFIG_INVALID, noProviderMessage(req.alias));
      const started = Date.now();
      const res = await withLlmRetry(() => route.provider.complete(route.model, req), req.signal, options.retry ?? DEFAULT_LLM_RETRY);
      log.debug({ provider: res.provider, model: res.model, ms: Date.now() - started, tokens: res.usage }, 'llm call');
      return res;
    },
  };
}
