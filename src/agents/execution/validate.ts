// Validation of one iteration's result against spec.execution.validation: every rule must pass. The failures are
// what the next iteration is told to fix (refinement).
import { tenantAjv } from '../../util/tenant-ajv.ts';
import type { ValidationRule } from '../manifest/types.ts';

export interface IterationOutcome {
  /** The model's final text of the iteration. */
  output: string;
  /** Exit code of the last cmd.run of the iteration, if any ran. */
  lastExitCode: number | undefined;
  lastStderr: string | undefined;
}

export interface JudgeVerdict {
  score: number;
  reasoning: string;
}

/** Runs a semantic judge (another agent) on the output; journaled by the caller. */
export type Judge = (rule: Extract<ValidationRule, { type: 'semantic' }>, output: string) => Promise<JudgeVerdict>;

export interface ValidationFailure {
  rule: ValidationRule['type'];
  message: string;
}

const ajv = tenantAjv({ allErrors: true, strict: false });

function extractJson(text: string): unknown {
  const trimmed = text.trim();
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(trimmed);
  return JSON.parse(fenced?.[1] ?? trimmed);
}

export async function validateIteration(rules: ValidationRule[], outcome: IterationOutcome, judge: Judge): Promise<ValidationFailure[]> {
  const failures: ValidationFailure[] = [];
  for (const rule of rules) {
    switch (rule.type) {
      case 'exit_code': {
        if (outcome.lastExitCode === undefined) {
          failures.push({ rule: 'exit_code', message: `no command was run; expected exit code ${rule.expected}` });
        } else if (outcome.lastExitCode !== rule.expected) {
          const err = (outcome.lastStderr ?? '').trim().slice(-2000);
          failures.push({
            rule: 'exit_code',
            message: `the last command exited with ${outcome.lastExitCode}, expected ${rule.expected}${err ? `; stderr:\n${err}` : ''}`,
          });
        }
        break;
      }
      case 'json_schema': {
        let value: unknown;
        try {
          value = extractJson(outcome.output);
        } catch {
          failures.push({ rule: 'json_schema', message: 'the final answer is not valid JSON' });
          break;
        }
        const check = ajv.compile(rule.schema);
        if (!check(value)) failures.push({ rule: 'json_schema', message: `the final answer does not match the schema: ${ajv.errorsText(check.errors)}` });
        break;
      }
      case 'semantic': {
        const verdict = await judge(rule, outcome.output);
        if (!(verdict.score >= rule.min_score)) {
          failures.push({ rule: 'semantic', message: `judge ${rule.judge_agent} scored ${verdict.score} < ${rule.min_score}: ${verdict.reasoning}` });
        }
        break;
      }
    }
  }
  return failures;
}
