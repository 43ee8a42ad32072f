// The controller-managed sections of the node configuration (SyncConfig / PushConfig; docs/CLUSTER.md
// "Configuration sync"): a YAML document with at most these keys, applied by a worker without a restart.
//
//   llm_providers: [...]                   same shape as spec.llm_providers; replaces the worker's providers
//   cluster: { heartbeat_interval_seconds } the worker's heartbeat period
//
// Anything else is refused (PushConfig answers accepted=false with the reason; setManagedConfig throws 422).
import type { LlmProviderConfig } from '../config/types.ts';
import type { LlmRegistryWithRoutes } from '../agents/llm/registry.ts';
import type { LlmRequest, LlmResponse } from '../agents/llm/types.ts';

export interface ManagedConfig {
  llm_providers?: LlmProviderConfig[];
  cluster?: { heartbeat_interval_seconds?: number };
}

const TOP = new Set(['llm_providers', 'cluster']);
const CLUSTER = new Set(['heartbeat_interval_seconds']);
const PROVIDER = new Set(['name', 'type', 'endpoint', 'api_key', 'models']);

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Answers the first problem of a managed-config document, or undefined when it is valid. */
export function checkManagedConfig(doc: unknown): string | undefined {
  if (doc === null || doc === undefined) return undefined;
  if (!isObj(doc)) return 'managed config must be a mapping';
  for (const k of Object.keys(doc)) if (!TOP.has(k)) return `${k} is not a controller-managed section (allowed: ${[...TOP].join(', ')})`;
  if (doc.cluster !== undefined) {
    if (!isObj(doc.cluster)) return 'cluster must be a mapping';
    for (const k of Object.keys(doc.cluster)) if (!CLUSTER.has(k)) return `cluster.${k} is not controller-managed`;
    const hb = doc.cluster.heartbeat_interval_seconds;
    if (hb !== undefined && (typeof hb !== 'number' || !(hb > 0) || hb > 3600)) return 'cluster.heartbeat_interval_seconds must be a number in (0, 3600]';
  }
  if (doc.llm_providers !== undefined) {
    if (!Array.isArray(doc.llm_providers)) return 'llm_providers must be a list';
    for (const [i, p] of doc.llm_providers.entries()) {
      const at = `llm_providers[${i}]`;
      if (!isObj(p)) return `${at} must be a mapping`;
      for (const k of Object.keys(p)) if (!PROVIDER.has(k)) return `${at}.${k} is not a provider key`;
      if (typeof p.name !== 'string' || p.name === '') return `${at}.name is required`;
      if (p.type !== 'openai' && p.type !== 'anthropic') return `${at}.type must be openai or anthropic`;
      for (const k of ['endpoint', 'api_key'] as const) if (p[k] !== undefined && typeof p[k] !== 'string') return `${at}.${k} must be a string`;
      if (!Array.isArray(p.models) || p.models.length === 0) return `${at}.models must be a non-empty list`;
      for (const [j, m] of p.models.entries()) {
        if (!isObj(m) || typeof m.alias !== 'string' || typeof m.model !== 'string') return `${at}.models[${j}] needs alias and model`;
      }
    }
  }
  return undefined;
}

/**
 * An LLM registry whose providers can be replaced while the node runs (a managed `llm_providers` section).
 * Calls in flight finish on the registry they started with.
 */
export class SwappableLlmRegistry implements LlmRegistryWithRoutes {
  constructor(private current: LlmRegistryWithRoutes) {}
  replace(next: LlmRegistryWithRoutes): void {
    this.current = next;
  }
  complete(req: LlmRequest): Promise<LlmResponse> {
    return this.current.complete(req);
  }
  hasAlias(alias: string): boolean {
    return this.current.hasAlias(alias);
  }
  resolve(alias: string): ReturnType<LlmRegistryWithRoutes['resolve']> {
    return this.current.resolve(alias);
  }
}
