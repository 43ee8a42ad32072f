// Judge outputs and the four consensus strategies of seed 002 (ParallelAgents; issue 6's ValidateWithJudges reuses
// computeConsensus). The formulas are written out in docs/WORKFLOWS.md "Templates, conditions and consensus";
// the metadata of a result carries the intermediate figures so a run can be audited.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { ConsensusSpec, ConsensusStrategy } from './manifest/types.ts';

export interface JudgeVerdict {
  /** 0.0-1.0. */
  score: number;
  /** 0.0-1.0, the judge's confidence in its own score. */
  confidence: number;
  /** At least 10 characters. */
  reasoning: string;
  suggestions?: string[];
  verdict?: 'pass' | 'fail' | 'warning';
}

export interface JudgeInput {
  agent_id: string;
  weight: number;
  verdict: JudgeVerdict;
}

export interface ConsensusResult {
  score: number;
  confidence: number;
  strategy: ConsensusStrategy;
  /** The pass/fail decision of the strategy (and confidence >= min_agreement_confidence when that is set). */
  binary_valid: boolean;
  metadata: Record<string, unknown>;
}

const MIN_REASONING = 10;

/** Sums of decimal scores drift (0.8 + 0.6 = 1.4000000000000001): comparisons tolerate this much. */
export const SCORE_EPSILON = 1e-9;

export function atLeast(value: number, bound: number): boolean {
  return value >= bound - SCORE_EPSILON;
}

const judgeSchema = {
  type: 'object',
  required: ['score', 'confidence', 'reasoning'],
  properties: {
    score: { type: 'number', minimum: 0, maximum: 1 },
    confidence: { type: 'number', minimum: 0, maximum: 1 },
    reasoning: { type: 'string' },
    suggestions: { type: 'array', items: { type: 'string' } },
    verdict: { enum: ['pass', 'fail', 'warning'] },
  },
} as const;

// Compiled at the first judge output, not when the module loads: every node loads this file at start, and compiling
// (with ajv's meta-schema, on a fresh Ajv) was ~0.1 s of each start's CPU (issue 15 item 4).
let validateJudgeFn: ValidateFunction | undefined;
function validateJudge(value: unknown): { valid: boolean; errors: ErrorObject[] | null | undefined } {
  validateJudgeFn ??= new Ajv({ allErrors: true, strict: false }).compile(judgeSchema);
  return { valid: validateJudgeFn(value), errors: validateJudgeFn.errors };
}

function describe(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .map((e) => {
      const missing = (e.params as { missingProperty?: string }).missingProperty;
      const field = missing ?? (e.instancePath.replace(/^\//, '').replaceAll('/', '.') || 'output');
      return missing ? `missing required field "${field}"` : `field "${field}" ${e.message ?? 'is invalid'}`;
    })
    .join('; ');
}

function extractJson(text: string): unknown {
  const trimmed = text.trim();
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    // A judge may wrap its answer in a ```json fence, possibly after some prose.
    const fence = /```(?:json)?[ \t]*\r?\n([\s\S]*?)```/i.exec(trimmed);
    if (!fence?.[1]) throw new Error('judge output is not JSON (nor JSON inside a ```json fence)');
    try {
      return JSON.parse(fence[1]) as unknown;
    } catch (err) {
      throw new Error(`the JSON inside the judge's fence does not parse: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

export function parseJudgeOutput(text: string): { ok: true; verdict: JudgeVerdict } | { ok: false; error: string } {
  let value: unknown;
  try {
    value = extractJson(text);
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  const checked = validateJudge(value);
  if (!checked.valid) return { ok: false, error: `invalid judge output: ${describe(checked.errors)}` };
  const v = value as JudgeVerdict;
  if (v.reasoning.trim().length < MIN_REASONING) {
    return { ok: false, error: `invalid judge output: field "reasoning" must have at least ${MIN_REASONING} characters` };
  }
  const verdict: JudgeVerdict = { score: v.score, confidence: v.confidence, reasoning: v.reasoning };
  if (v.suggestions !== undefined) verdict.suggestions = v.suggestions;
  if (v.verdict !== undefined) verdict.verdict = v.verdict;
  return { ok: true, verdict };
}

/** min_judges_required is checked by the caller before computing: the state fails when fewer judges completed. */
export function judgeShortfall(spec: Pick<ConsensusSpec, 'min_judges_required'>, completed: number): string | undefined {
  const required = Math.max(1, spec.min_judges_required);
  return completed >= required ? undefined : `only ${completed} of the ${required} required judges completed`;
}

interface Stats {
  score: number;
  variance: number;
  agreement: number;
  self_confidence: number;
  confidence: number;
  total_weight: number;
}

/** Weights below zero or not finite count as 0; when every weight is 0 the judges count equally. */
function weightsOf(judges: JudgeInput[]): number[] {
  const raw = judges.map((j) => (Number.isFinite(j.weight) && j.weight > 0 ? j.weight : 0));
  return raw.some((w) => w > 0) ? raw : raw.map(() => 1);
}

function weightedMean(values: number[], weights: number[]): number {
  let sum = 0;
  let total = 0;
  values.forEach((v, i) => {
    const w = weights[i] ?? 0;
    sum += w * v;
    total += w;
  });
  return total > 0 ? sum / total : 0;
}

/** weighted_average over `judges` (also best_of_n over its top n). */
function weightedStats(judges: JudgeInput[], spec: ConsensusSpec): Stats {
  const weights = weightsOf(judges);
  const scores = judges.map((j) => j.verdict.score);
  const score = weightedMean(scores, weights);
  const variance = weightedMean(scores.map((s) => (s - score) ** 2), weights);
  // Scores lie in [0,1], so the standard deviation lies in [0,0.5]: agreement 1 when all judges agree, 0 when
  // they split evenly between 0 and 1.
  const agreement = Math.max(0, 1 - 2 * Math.sqrt(variance));
  const selfConfidence = weightedMean(judges.map((j) => j.verdict.confidence), weights);
  const { agreement_factor: a, self_confidence_factor: b } = spec.confidence_weighting;
  return {
    score,
    variance,
    agreement,
    self_confidence: selfConfidence,
    confidence: a * agreement + b * selfConfidence,
    total_weight: weights.reduce((x, y) => x + y, 0),
  };
}

function majority(judges: JudgeInput[], spec: ConsensusSpec): Omit<ConsensusResult, 'strategy'> {
  const pass = judges.filter((j) => atLeast(j.verdict.score, spec.threshold));
  const fail = judges.filter((j) => !atLeast(j.verdict.score, spec.threshold));
  const passed = pass.length > fail.length; // a tie is no majority
  const winners = passed ? pass : fail;
  const score = weightedMean(winners.map((j) => j.verdict.score), weightsOf(winners));
  const margin = Math.abs(pass.length - fail.length) / judges.length;
  return {
    score,
    confidence: margin,
    binary_valid: passed,
    metadata: { votes_pass: pass.length, votes_fail: fail.length, margin, tie: pass.length === fail.length },
  };
}

function unanimous(judges: JudgeInput[], spec: ConsensusSpec): Omit<ConsensusResult, 'strategy'> {
  const failing = judges.filter((j) => !atLeast(j.verdict.score, spec.threshold));
  const passed = failing.length === 0;
  const weights = weightsOf(judges);
  const scores = judges.map((j) => j.verdict.score);
  const score = passed ? weightedMean(scores, weights) : Math.min(...scores);
  const confidence = Math.min(...judges.map((j) => j.verdict.confidence));
  return {
    score,
    confidence,
    binary_valid: passed,
    metadata: { failing: failing.map((j) => j.agent_id), min_confidence: confidence },
  };
}

function bestOfN(judges: JudgeInput[], spec: ConsensusSpec): Omit<ConsensusResult, 'strategy'> {
  const n = Math.min(judges.length, Math.max(1, Math.floor(spec.n ?? judges.length)));
  const ranked = judges
    .map((j, index) => ({ j, index, rank: j.verdict.score * j.verdict.confidence }))
    .sort((x, y) => y.rank - x.rank || y.j.verdict.score - x.j.verdict.score || y.j.verdict.confidence - x.j.verdict.confidence || x.index - y.index);
  const top = ranked.slice(0, n).map((r) => r.j);
  const stats = weightedStats(top, spec);
  return {
    score: stats.score,
    confidence: stats.confidence,
    binary_valid: atLeast(stats.score, spec.threshold),
    metadata: {
      n,
      selected: top.map((j) => j.agent_id),
      ranking: ranked.map((r) => ({ agent_id: r.j.agent_id, rank_score: r.rank })),
      variance: stats.variance,
      agreement: stats.agreement,
      self_confidence: stats.self_confidence,
    },
  };
}

export function computeConsensus(spec: ConsensusSpec, judges: JudgeInput[]): ConsensusResult {
  const common = { judges: judges.length, threshold: spec.threshold, min_agreement_confidence: spec.min_agreement_confidence ?? null };
  if (judges.length === 0) {
    return { score: 0, confidence: 0, strategy: spec.strategy, binary_valid: false, metadata: { ...common, reason: 'no judge completed' } };
  }
  let result: Omit<ConsensusResult, 'strategy'>;
  switch (spec.strategy) {
    case 'weighted_average': {
      const stats = weightedStats(judges, spec);
      result = {
        score: stats.score,
        confidence: stats.confidence,
        binary_valid: atLeast(stats.score, spec.threshold),
        metadata: { variance: stats.variance, agreement: stats.agreement, self_confidence: stats.self_confidence, total_weight: stats.total_weight },
      };
      break;
    }
    case 'majority':
      result = majority(judges, spec);
      break;
    case 'unanimous':
      result = unanimous(judges, spec);
      break;
    case 'best_of_n':
      result = bestOfN(judges, spec);
      break;
    default: {
      const unknown: never = spec.strategy;
      throw new Error(`unknown consensus strategy ${String(unknown)}`);
    }
  }
  const agreed = spec.min_agreement_confidence === undefined || atLeast(result.confidence, spec.min_agreement_confidence);
  return {
    score: result.score,
    confidence: result.confidence,
    strategy: spec.strategy,
    binary_valid: result.binary_valid && agreed,
    metadata: { ...common, ...result.metadata },
  };
}
