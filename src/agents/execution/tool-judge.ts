// The inner-loop judge of seed 001: when the manifest enables `spec.execution.tool_validation`, each proposed tool
// call (the tool and its arguments, not its result) is scored by the judge agent(s) named there before it runs;
// a call scoring under `min_score` is not run and the model gets `ToolCallRejected` with the judge's reasoning.
// Tools whose skip_judge is true (seed default, overridable only by the node config) bypass it. Calls from SEAL and
// MCP never come here: only the refinement loop calls this.
import type { ValidationRule } from '../manifest/types.ts';
import type { TenantJudge } from './judge.ts';

export interface ToolValidationRule {
  judge_agent: string;
  min_score: number;
  criteria?: string;
}

/** The manifest's `tool_validation` entries that name a judge; malformed entries are ignored (the schema is open). */
export function toolValidationRules(raw: unknown[] | undefined): ToolValidationRule[] {
  return (raw ?? []).flatMap((r) => {
    const x = r as { judge_agent?: unknown; min_score?: unknown; criteria?: unknown };
    if (typeof x?.judge_agent !== 'string' || x.judge_agent === '') return [];
    const min = typeof x.min_score === 'number' ? x.min_score : 0.7;
    return [{ judge_agent: x.judge_agent, min_score: min, ...(typeof x.criteria === 'string' ? { criteria: x.criteria } : {}) }];
  });
}

export interface ToolJudgement {
  allowed: boolean;
  reason?: string;
}

export async function judgeToolCall(
  judge: TenantJudge | undefined,
  tenant: string,
  rules: ToolValidationRule[],
  tool: string,
  args: Record<string, unknown>,
): Promise<ToolJudgement> {
  if (rules.length === 0) return { allowed: true };
  if (!judge) return { allowed: false, reason: 'tool_validation is enabled but this node has no judge runner' };
  const proposal = JSON.stringify({ tool, arguments: args });
  for (const rule of rules) {
    const semantic: Extract<ValidationRule, { type: 'semantic' }> = {
      type: 'semantic',
      judge_agent: rule.judge_agent,
      min_score: rule.min_score,
      criteria: rule.criteria ?? 'Is this tool call safe, relevant to the task and well formed? Judge the proposed call, not its result.',
    };
    const verdict = await judge(tenant, semantic, `Proposed tool call:\n${proposal}`);
    if (!(verdict.score >= rule.min_score)) {
      return { allowed: false, reason: `judge ${rule.judge_agent} scored ${verdict.score} < ${rule.min_score}: ${verdict.reasoning}` };
    }
  }
  return { allowed: true };
}
