// The price table (config spec.pricing, docs/CONFIG.md "Model prices") turned into cost: an agent's model alias is
// priced by its own entry, else by the entry of the provider model it maps to; a model with no entry has no cost
// (null), never a guessed one.
import type { ModelPrice, PricingConfig } from '../config/types.ts';

export class PriceTable {
  private readonly byModel: Map<string, ModelPrice>;
  readonly currency: string;

  constructor(
    cfg: PricingConfig | undefined,
    /** alias → the provider model it maps to (the LLM registry's routes); absent: aliases only. */
    private readonly resolve: (alias: string) => string | undefined = () => undefined,
  ) {
    this.currency = cfg?.currency ?? 'USD';
    this.byModel = new Map((cfg?.models ?? []).map((m) => [m.model, m]));
  }

  /** Whether any price is configured (else the dashboard says cost is not configured and shows tokens). */
  get configured(): boolean {
    return this.byModel.size > 0;
  }

  priceOf(model: string | null | undefined): ModelPrice | undefined {
    if (!model) return undefined;
    const own = this.byModel.get(model);
    if (own) return own;
    const target = this.resolve(model);
    return target === undefined ? undefined : this.byModel.get(target);
  }

  /** Cost of these tokens of `model`, rounded to 1e-6 of the currency; null when the model has no price. */
  cost(model: string | null | undefined, promptTokens: number, completionTokens: number): number | null {
    const p = this.priceOf(model);
    if (!p) return null;
    return round6((promptTokens / 1000) * p.input_per_1k + (completionTokens / 1000) * p.output_per_1k);
  }
}

export function round6(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}
