// Model aliases across the configured providers (CONTRACT.md llm_providers): the first provider that declares an
// alias serves it; a concrete model name of a provider resolves too (again first provider wins, and a declared alias
// always beats a model name). Unknown aliases fail with the sentence users see on the execution. Each call goes
// through retry.ts; logs carry provider, model, attempts and tokens, never keys or message content.
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { LlmProviderConfig } from '../../config/types.ts';
import type { Logger } from '../../logging/logger.ts';
import { AnthropicProvider } from './anthropic.ts';
import { OpenAiProvider } from './openai.ts';
import { withLlmRetry, type LlmRetryOptions } from './retry.ts';
import type { LlmProvider, LlmRegistry, LlmRequest, LlmResponse } from './types.ts';

export function noProviderMessage(alias: string): string {
  return `no LLM provider configured for alias "${alias}"`;
}

export interface LlmRegistryOptions {
  /** Retry policy (defaults: 4 attempts, 250 ms base delay). */
  retry?: Partial<LlmRetryOptions>;
  /** Builds the backend of one provider entry; the default speaks HTTP through the official SDKs. */
  providerFactory?: (cfg: LlmProviderConfig) => LlmProvider;
}

export interface LlmRoute {
  provider: string;
  model: string;
}

export interface LlmRegistryWithRoutes extends LlmRegistry {
  /** Where an alias goes, or undefined when no provider serves it. */
  resolve(alias: string): LlmRoute | undefined;
}

export function providerFromConfig(cfg: LlmProviderConfig): LlmProvider {
  const opts = { endpoint: cfg.endpoint, apiKey: cfg.api_key };
  switch (cfg.type) {
    case 'anthropic':
      return new AnthropicProvider(cfg.name, opts);
    case 'openai':
      return new OpenAiProvider(cfg.name, opts);
    default:
      throw new OrchError(Errors.CONFIG_INVALID, `LLM provider "${(cfg as LlmProviderConfig).name}" has an unknown type`);
  }
}

export function createLlmRegistry(configs: LlmProviderConfig[], logger: Logger, options: LlmRegistryOptions = {}): LlmRegistryWithRoutes {
  const factory = options.providerFactory ?? providerFromConfig;
  const providers = configs.map((cfg) => ({ cfg, provider: factory(cfg) }));
  const routes = new Map<string, { provider: LlmProvider; model: string }>();
  for (const { cfg, provider } of providers) {
    for (const m of cfg.models) if (!routes.has(m.alias)) routes.set(m.alias, { provider, model: m.model });
  }
  for (const { cfg, provider } of providers) {
    for (const m of cfg.models) if (!routes.has(m.model)) routes.set(m.model, { provider, model: m.model });
  }
  const log = logger.child({ component: 'llm' });

  return {
    hasAlias: (alias) => routes.has(alias),
    resolve(alias) {
      const r = routes.get(alias);
      return r ? { provider: r.provider.name, model: r.model } : undefined;
    },
    async complete(req: LlmRequest): Promise<LlmResponse> {
      const route = routes.get(req.alias);
      if (!route) throw new OrchError(Errors.CONFIG_INVALID, noProviderMessage(req.alias));
      const where = { alias: req.alias, provider: route.provider.name, model: route.model };
      const started = Date.now();
      let attempts = 0;
      try {
        const res = await withLlmRetry(
          (attempt) => {
            attempts = attempt;
            return route.provider.complete(route.model, req);
          },
          req.signal,
          options.retry,
          (e) => log.debug({ ...where, attempt: e.attempt, status: e.status, delay_ms: e.delayMs }, 'llm call failed, retrying'),
        );
        log.debug(
          { ...where, answered_by: res.model, attempts, ms: Date.now() - started, prompt_tokens: res.usage.prompt_tokens, completion_tokens: res.usage.completion_tokens, finish_reason: res.finish_reason },
          'llm call',
        );
        return res;
      } catch (err) {
        log.debug({ ...where, attempts, ms: Date.now() - started, code: (err as OrchError).code, status: ((err as OrchError).details as { status?: number } | undefined)?.status }, 'llm call failed');
        throw err;
      }
    },
  };
}
