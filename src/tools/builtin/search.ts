// orch.agent.search and orch.workflow.search (seed 001) over the Cortex index of agents and workflows
// (src/cortex/search.ts): `query` required; `limit` (10), `min_score` (0.3), `labels` (every pair must match),
// `include_platform_templates` (true; false leaves out global-scope ones) and, for agents, `status`. Result:
// `tool`, `query`, `results` (id, name, version, description, labels, score, scope; best first), `total`. Without
// Cortex (no `cortex` section in the node config) both answer NotAvailable `... Cortex not configured ...`.
import type { CortexSearchIndex, SearchHit } from '../../cortex/search.ts';
import type { ToolCallContext, ToolDefinition } from '../types.ts';
import { fail, ok, schema, str } from './util.ts';

export interface SearchToolDeps {
  /** The Cortex index; absent when Cortex is disabled. */
  index?: CortexSearchIndex | undefined;
}

const common = {
  query: { type: 'string', description: 'what the agent or workflow should do, in natural language' },
  limit: { type: 'integer', minimum: 1, maximum: 100, default: 10 },
  min_score: { type: 'number', minimum: 0, maximum: 1, default: 0.3 },
  labels: { type: 'object', additionalProperties: { type: 'string' }, description: 'every pair must match' },
  include_platform_templates: { type: 'boolean', default: true, description: 'false: leave out global-scope (platform) ones' },
};

export function searchTools(deps: SearchToolDeps): ToolDefinition[] {
  const run =
    (tool: string, search: (index: CortexSearchIndex, ctx: ToolCallContext, args: Record<string, unknown>) => Promise<SearchHit[]>): ToolDefinition['handler'] =>
    async (ctx, args) => {
      if (!deps.index) return fail('NotAvailable', `${tool}: Cortex not configured on this node (spec.cortex in the node config)`);
      const results = await search(deps.index, ctx, args);
      return ok({ tool, query: str(args.query), results, total: results.length });
    };
  const viewer = (ctx: ToolCallContext) => ({ subject: ctx.principal.subject, roles: ctx.principal.roles });
  return [
    {
      name: 'orch.agent.search',
      description: 'Semantic search over the agents you can see (Cortex index): best matches first with a score 0.0-1.0.',
      inputSchema: schema({ ...common, status: { type: 'string', description: 'only agents in this status, such as deployed or paused' } }, ['query']),
      required: ['query'],
      skipJudge: true,
      handler: run('orch.agent.search', (index, ctx, args) => index.searchAgents(ctx.tenantId, viewer(ctx), args.query, args)),
    },
    {
      name: 'orch.workflow.search',
      description: 'Semantic search over the workflows you can see (Cortex index): best matches first with a score 0.0-1.0.',
      inputSchema: schema(common, ['query']),
      required: ['query'],
      skipJudge: true,
      handler: run('orch.workflow.search', (index, ctx, args) => index.searchWorkflows(ctx.tenantId, viewer(ctx), args.query, args)),
    },
  ];
}
