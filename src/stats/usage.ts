// Tokens and cost per tenant and per agent over a window (GET /v1/stats/usage): the executions that finished in the
// last `minutes` (executions_completed index), grouped by tenant, agent and model, priced by the price table
// (pricing.ts). The caller's tenant only, unless an operator asks for the whole cluster.
import type { Queryable } from '../storage/db.ts';
import { checkMinutes } from './history.ts';
import { round6, type PriceTable } from './pricing.ts';

export interface AgentUsage {
  tenant_id: string;
  agent_name: string;
  /** The agent's `spec.runtime.model` (alias); null for a manifest without one. */
  model: string | null;
  executions: number;
  prompt_tokens: number;
  completion_tokens: number;
  /** null: the model has no price. */
  cost: number | null;
}

export interface TenantUsage {
  tenant_id: string;
  executions: number;
  prompt_tokens: number;
  completion_tokens: number;
  /** Of the priced models only (see unpriced_tokens); null when no price table is configured. */
  cost: number | null;
  unpriced_tokens: number;
}

export interface Usage {
  minutes: number;
  scope: 'tenant' | 'cluster';
  currency: string;
  priced: boolean;
  tenants: TenantUsage[];
  agents: AgentUsage[];
  /** Models that ran in the window with no price in the table. */
  unpriced_models: string[];
  /** More than MAX_ROWS (tenant, agent, model) groups: the largest by tokens are listed, the tenant totals are whole. */
  truncated: boolean;
}

const MAX_ROWS = 2000;

export async function readUsage(db: Queryable, prices: PriceTable, o: { tenant: string; minutes: number; cluster: boolean }): Promise<Usage> {
  checkMinutes(o.minutes);
  const window = `completed_at >= now() - $1::INT4 * interval '1 minute'`;
  const res = await db.query<{ tenant_id: string; agent_name: string; model: string | null; executions: number; prompt: string; completion: string }>(
    `SELECT tenant_id, agent_name, manifest->'spec'->'runtime'->>'model' AS model, count(*)::INT4 AS executions,
            sum(prompt_tokens)::BIGINT::TEXT AS prompt, sum(completion_tokens)::BIGINT::TEXT AS completion
     FROM executions WHERE ${window} ${o.cluster ? '' : 'AND tenant_id = $2'}
     GROUP BY 1, 2, 3`,
    o.cluster ? [o.minutes] : [o.minutes, o.tenant],
  );
  const agents: AgentUsage[] = res.rows.map((r) => {
    const prompt = Number(r.prompt);
    const completion = Number(r.completion);
    return { tenant_id: r.tenant_id, agent_name: r.agent_name, model: r.model, executions: Number(r.executions), prompt_tokens: prompt, completion_tokens: completion, cost: prices.cost(r.model, prompt, completion) };
  });
  const tenants = new Map<string, TenantUsage>();
  const unpriced = new Set<string>();
  for (const a of agents) {
    let t = tenants.get(a.tenant_id);
    if (!t) tenants.set(a.tenant_id, (t = { tenant_id: a.tenant_id, executions: 0, prompt_tokens: 0, completion_tokens: 0, cost: prices.configured ? 0 : null, unpriced_tokens: 0 }));
    t.executions += a.executions;
    t.prompt_tokens += a.prompt_tokens;
    t.completion_tokens += a.completion_tokens;
    if (a.cost !== null && t.cost !== null) t.cost = round6(t.cost + a.cost);
    if (a.cost === null && a.prompt_tokens + a.completion_tokens > 0) {
      t.unpriced_tokens += a.prompt_tokens + a.completion_tokens;
      unpriced.add(a.model ?? '(none)');
    }
  }
  const total = (x: { prompt_tokens: number; completion_tokens: number }): number => x.prompt_tokens + x.completion_tokens;
  agents.sort((a, b) => total(b) - total(a) || a.tenant_id.localeCompare(b.tenant_id) || a.agent_name.localeCompare(b.agent_name));
  return {
    minutes: o.minutes,
    scope: o.cluster ? 'cluster' : 'tenant',
    currency: prices.currency,
    priced: prices.configured,
    tenants: [...tenants.values()].sort((a, b) => total(b) - total(a) || a.tenant_id.localeCompare(b.tenant_id)),
    agents: agents.slice(0, MAX_ROWS),
    unpriced_models: [...unpriced].sort(),
    truncated: agents.length > MAX_ROWS,
  };
}
