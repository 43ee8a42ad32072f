// Builds the node's StimulusService from its parts: the workflow runs, the router agent's model call through the
// node's LLM registry, and the workflow registry for the router's list of candidates.
import type { LlmRegistry } from '../agents/llm/types.ts';
import type { NodeConfig } from '../config/types.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import type { WorkflowDefinitionService } from '../workflow/registry/service.ts';
import { createLlmClassifier, type RouterAgentSource } from './router.ts';
import { StimulusService, type WorkflowStarter } from './service.ts';

export function createStimulusService(o: {
  db: Db;
  config: NodeConfig['stimuli'];
  runs: WorkflowStarter;
  llm: LlmRegistry;
  agents: RouterAgentSource;
  workflows: WorkflowDefinitionService;
  logger: Logger;
}): StimulusService {
  return new StimulusService({
    db: o.db,
    runs: o.runs,
    config: o.config ?? { routes: [], classification_threshold: 0.7 },
    classify: createLlmClassifier(o.llm, o.agents),
    workflowNames: async (tenant, subject) => [...new Set((await o.workflows.list(tenant, { subject: subject ?? '' })).map((w) => w.name))],
    logger: o.logger,
  });
}
