// The `semantic` validation rule: a judge agent scores the iteration's output. The judge runs as one model call
// with the judge agent's own instruction and model alias (it needs no tools or sandbox), asked for the judge JSON
// of seed 002 (score, confidence, reasoning). Consensus over several judges is ValidateWithJudges (issue 6); a
// rule names one judge. Its answer is journaled by the loop like every other model answer.
import type { LlmRegistry } from '../llm/types.ts';
import type { AgentManifest, ValidationRule } from '../manifest/types.ts';
import type { JudgeVerdict } from './validate.ts';

export interface JudgeAgentSource {
  manifestByName(tenant: string, name: string): Promise<AgentManifest>;
}

export type TenantJudge = (tenant: string, rule: Extract<ValidationRule, { type: 'semantic' }>, output: string) => Promise<JudgeVerdict>;

function parseVerdict(text: string): JudgeVerdict | undefined {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(text);
  const raw = fenced?.[1] ?? text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1);
  try {
    const v = JSON.parse(raw) as { score?: unknown; reasoning?: unknown };
    if (typeof v.score !== 'number' || !(v.score >= 0 && v.score <= 1)) return undefined;
    return { score: v.score, reasoning: typeof v.reasoning === 'string' ? v.reasoning : '' };
  } catch {
    return undefined;
  }
}

export function createLlmJudge(llm: LlmRegistry, agents: JudgeAgentSource): TenantJudge {
  return async (tenant, rule, output) => {
    const judge = await agents.manifestByName(tenant, rule.judge_agent);
    const res = await llm.complete({
      alias: judge.spec.runtime.model,
      tools: [],
      messages: [
        {
          role: 'system',
          content: `${judge.spec.task.instruction}\nAnswer only with JSON: {"score": <0.0-1.0>, "confidence": <0.0-1.0>, "reasoning": "<at least 10 characters>"}.`,
        },
        { role: 'user', content: `Criteria: ${rule.criteria ?? 'the output accomplishes the task'}\n\nOutput to judge:\n${output}` },
      ],
      signal: AbortSignal.timeout(judge.spec.execution.llm_timeout_seconds * 1000),
    });
    return parseVerdict(res.content ?? '') ?? { score: 0, reasoning: `judge ${rule.judge_agent} did not answer valid judge JSON` };
  };
}
