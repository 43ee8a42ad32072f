// Stage 2 of stimulus routing: the router agent (spec.stimuli.router_agent) classifies a stimulus into one of the
// tenant's deployed workflows. Like the judge (src/agents/execution/judge.ts) it is one model call with the agent's
// own instruction and model alias, asked for JSON {"workflow": <name>, "confidence": <0..1>}. An answer that is not
// that JSON, or names a workflow that is not deployed, is a classification with confidence 0.
import type { LlmRegistry } from '../agents/llm/types.ts';
import type { AgentManifest } from '../agents/manifest/types.ts';

export interface Classification {
  workflow: string | undefined;
  confidence: number;
  /** Why the answer was not usable (kept on the stimulus row). */
  problem?: string;
}

export interface RouterAgentSource {
  manifestByName(tenant: string, name: string): Promise<AgentManifest>;
}

/** Classifies `content` among `workflows` (names) with the tenant's router agent `agent`. */
export type StimulusClassifier = (req: { tenant: string; agent: string; source: string; content: string; workflows: string[] }) => Promise<Classification>;

export function parseClassification(text: string, workflows: readonly string[]): Classification {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(text);
  const raw = fenced?.[1] ?? text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1);
  let v: { workflow?: unknown; confidence?: unknown };
  try {
    v = JSON.parse(raw) as typeof v;
  } catch {
    return { workflow: undefined, confidence: 0, problem: 'router agent did not answer JSON' };
  }
  if (v === null || typeof v !== 'object') return { workflow: undefined, confidence: 0, problem: 'router agent did not answer a JSON object' };
  const confidence = typeof v.confidence === 'number' && v.confidence >= 0 && v.confidence <= 1 ? v.confidence : undefined;
  if (confidence === undefined) return { workflow: undefined, confidence: 0, problem: 'router agent answered no confidence in [0, 1]' };
  if (typeof v.workflow !== 'string' || !workflows.includes(v.workflow)) {
    return { workflow: undefined, confidence: 0, problem: `router agent chose ${JSON.stringify(v.workflow)}, which is not a deployed workflow` };
  }
  return { workflow: v.workflow, confidence };
}

export function createLlmClassifier(llm: LlmRegistry, agents: RouterAgentSource): StimulusClassifier {
  return async ({ tenant, agent, source, content, workflows }) => {
    const manifest = await agents.manifestByName(tenant, agent);
    const res = await llm.complete({
      alias: manifest.spec.runtime.model,
      tools: [],
      messages: [
        {
          role: 'system',
          content:
            `${manifest.spec.task.instruction}\n` +
            `Choose the workflow that should handle the event. Deployed workflows: ${JSON.stringify(workflows)}.\n` +
            'Answer only with JSON: {"workflow": "<one of the deployed workflows>", "confidence": <0.0-1.0>}.',
        },
        { role: 'user', content: `Source: ${source}\n\nEvent:\n${content}` },
      ],
      signal: AbortSignal.timeout(manifest.spec.execution.llm_timeout_seconds * 1000),
    });
    return parseClassification(res.content ?? '', workflows);
  };
}
