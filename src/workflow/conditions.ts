// The 17 transition conditions of seed 002, evaluated against the facts a finished state reports (StateOutcome)
// and, for `custom`, the template scope. Transitions are tried top to bottom; the first match wins.
// Boundaries (docs/WORKFLOWS.md): score_above / score_below / confidence_above are strict; score_between is
// inclusive; consensus needs score >= threshold and confidence >= agreement; all_approved / any_rejected compare
// each judge with the consensus threshold (the transition's own `threshold` overrides it when set). Bounds
// tolerate SCORE_EPSILON (1e-9) of floating-point drift. A condition
// whose fact is absent (an exit code on an Agent state, a score on a System state) does not match.
import type { StateOutcome } from './engine/runner-types.ts';
import type { ConditionType, Transition } from './manifest/types.ts';
import { atLeast, SCORE_EPSILON } from './consensus.ts';
import { evaluateExpression, type ScopeArg } from './template/render.ts';

const YES = new Set(['yes', 'approve', 'approved', 'true']);
const NO = new Set(['no', 'reject', 'rejected', 'false']);

// Scores and confidences are computed sums: a bound is met within SCORE_EPSILON, and exceeded only beyond it.
const above = (value: number, bound: number): boolean => value > bound + SCORE_EPSILON;
const below = (value: number, bound: number): boolean => value < bound - SCORE_EPSILON;

function normalised(response: string | undefined): string | undefined {
  return response?.trim().toLowerCase();
}

function judgeScores(outcome: StateOutcome): { scores: number[]; threshold: number } | undefined {
  return outcome.consensus ? { scores: outcome.consensus.scores, threshold: outcome.consensus.threshold } : undefined;
}

export function conditionMatches(t: Transition, outcome: StateOutcome, scope: ScopeArg): boolean {
  const { score, confidence, exit_code: exitCode } = outcome;
  // The parser fills an absent condition with 'always'; a transition built elsewhere may still omit it.
  const condition: ConditionType = (t.condition as ConditionType | undefined) ?? 'always';
  switch (condition) {
    case 'always':
      return true;
    case 'on_success':
      return outcome.status === 'success';
    case 'on_failure':
      return outcome.status === 'failed';
    case 'exit_code_zero':
      return exitCode === 0;
    case 'exit_code_non_zero':
      return exitCode !== undefined && exitCode !== 0;
    case 'exit_code': {
      const wanted = t.value?.trim();
      return exitCode !== undefined && wanted !== undefined && /^[+-]?\d+$/.test(wanted) && Number(wanted) === exitCode;
    }
    case 'score_above':
      return score !== undefined && t.threshold !== undefined && above(score, t.threshold);
    case 'score_below':
      return score !== undefined && t.threshold !== undefined && below(score, t.threshold);
    case 'score_between':
      return score !== undefined && t.min !== undefined && t.max !== undefined && atLeast(score, t.min) && !above(score, t.max);
    case 'confidence_above':
      return confidence !== undefined && t.threshold !== undefined && above(confidence, t.threshold);
    case 'consensus': {
      const s = outcome.consensus?.score ?? score;
      const c = outcome.consensus?.confidence ?? confidence;
      const threshold = t.threshold ?? outcome.consensus?.threshold;
      if (s === undefined || c === undefined || threshold === undefined) return false;
      return atLeast(s, threshold) && atLeast(c, t.agreement ?? 0);
    }
    case 'all_approved': {
      const judges = judgeScores(outcome);
      if (!judges || judges.scores.length === 0) return false;
      const threshold = t.threshold ?? judges.threshold;
      return judges.scores.every((s) => atLeast(s, threshold));
    }
    case 'any_rejected': {
      const judges = judgeScores(outcome);
      if (!judges) return false;
      const threshold = t.threshold ?? judges.threshold;
      return judges.scores.some((s) => !atLeast(s, threshold));
    }
    case 'input_equals':
      return outcome.response !== undefined && t.value !== undefined && outcome.response === t.value;
    case 'input_equals_yes': {
      const r = normalised(outcome.response);
      return r !== undefined && YES.has(r);
    }
    case 'input_equals_no': {
      const r = normalised(outcome.response);
      return r !== undefined && NO.has(r);
    }
    case 'custom':
      return t.expression !== undefined && evaluateExpression(t.expression, scope);
    default: {
      // A condition type the parser let through but this version does not know never matches.
      const unknown: never = condition;
      void unknown;
      return false;
    }
  }
}

/** The first transition whose condition matches, or undefined (no rule matched: the engine fails the run). */
export function selectTransition(transitions: Transition[], outcome: StateOutcome, scope: ScopeArg): Transition | undefined {
  return transitions.find((t) => conditionMatches(t, outcome, scope));
}
