// ValidateWithJudges (seed 000; docs/JUDGES.md): every judge runs as a real agent execution through the
// ExecutionService (its own events, logs and limits), all at once. Its input is the JudgeConfig's input_template
// rendered with Handlebars over {output, task, context} (context is context_json); its final output must be the
// judge JSON of seed 002, checked by parseJudgeOutput — a judge that fails, times out or answers invalid JSON is
// reported in individual_results with `error` and left out of the consensus. The verdicts are combined by
// computeConsensus, the same code ParallelAgents uses. Proto strategy → consensus strategy:
//   WEIGHTED_AVERAGE → weighted_average (with `n` set: best_of_n over the top n, the weighted average of those)
//   MAJORITY_VOTE    → majority
//   UNANIMOUS        → unanimous
//   ANY_APPROVED     → valid when at least one judge scores at or above the threshold; score and confidence are
//                      the weighted_average of the approving judges (of all judges when none approves).
import { randomUUID } from 'node:crypto';
import type { AgentSource, ExecutionService, ExecutionView } from '../agents/execution/service.ts';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import { atLeast, computeConsensus, judgeShortfall, parseJudgeOutput, type ConsensusResult, type JudgeInput } from '../workflow/consensus.ts';
import type { ConsensusSpec, ConsensusStrategy } from '../workflow/manifest/types.ts';
import { checkTemplate, renderTemplate } from '../workflow/template/render.ts';
import type { TemplateScope } from '../workflow/template/scope.ts';

/** ConsensusConfig.Strategy of seed 000, by number. */
export const ProtoStrategy = { WEIGHTED_AVERAGE: 0, MAJORITY_VOTE: 1, UNANIMOUS: 2, ANY_APPROVED: 3 } as const;

export interface JudgeConfigInput {
  agent_id: string;
  input_template?: string | undefined;
  /** 0 or absent: 1.0. */
  weight?: number | undefined;
}

export interface ValidateInput {
  output: string;
  task: string;
  judges: JudgeConfigInput[];
  consensus?: { strategy?: number; threshold?: number | undefined; agreement?: number | undefined; n?: number | undefined; min_judges_required?: number | undefined };
  context_json?: string | undefined;
}

export interface JudgeResultView {
  agent_id: string;
  score: number;
  confidence: number;
  reasoning: string;
  binary_valid: boolean;
  weight: number;
  execution_id: string;
  error?: string;
}

export interface ValidateResult {
  score: number;
  confidence: number;
  reasoning: string;
  binary_valid: boolean;
  individual_results: JudgeResultView[];
  /** The consensus as computed (strategy, metadata), for logs and HTTP callers. */
  consensus?: ConsensusResult;
}

export interface JudgeServiceDeps {
  /** Late-bound: absent on a node that runs no agent executions. */
  executions: () => ExecutionService | undefined;
  agents: AgentSource;
  logger: Logger;
  /** Longest a judge may run (default 300 s); it is cancelled after. */
  judgeTimeoutMs?: number;
  pollMs?: number;
}

const MAX_JUDGES = 32;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

export const DEFAULT_JUDGE_TEMPLATE =
  'You are judging the output of a task.\n\nTask:\n{{task}}\n\nOutput to judge:\n{{output}}\n\n' +
  'Answer only with JSON: {"score": <0.0-1.0>, "confidence": <0.0-1.0>, "reasoning": "<at least 10 characters>"}';

function unit(v: number | undefined, name: string, fallback: number | undefined): number | undefined {
  if (v === undefined) return fallback;
  if (!Number.isFinite(v) || v < 0 || v > 1) throw new OrchError(Errors.BAD_REQUEST, `${name} must be between 0.0 and 1.0`);
  return v;
}

/** The consensus spec of a request, and whether it is ANY_APPROVED (which post-filters the judges). */
export function consensusSpecOf(c: ValidateInput['consensus']): { spec: ConsensusSpec; anyApproved: boolean } {
  const strategyNo = c?.strategy ?? ProtoStrategy.WEIGHTED_AVERAGE;
  const threshold = unit(c?.threshold, 'consensus.threshold', 0.7) ?? 0.7;
  const agreement = unit(c?.agreement, 'consensus.agreement', undefined);
  const n = c?.n;
  if (n !== undefined && (!Number.isInteger(n) || n < 1)) throw new OrchError(Errors.BAD_REQUEST, 'consensus.n must be a positive integer');
  const min = c?.min_judges_required ?? 1;
  if (!Number.isInteger(min) || min < 0) throw new OrchError(Errors.BAD_REQUEST, 'consensus.min_judges_required must be a non-negative integer');
  let strategy: ConsensusStrategy;
  switch (strategyNo) {
    case ProtoStrategy.WEIGHTED_AVERAGE:
      strategy = n !== undefined ? 'best_of_n' : 'weighted_average';
      break;
    case ProtoStrategy.MAJORITY_VOTE:
      strategy = 'majority';
      break;
    case ProtoStrategy.UNANIMOUS:
      strategy = 'unanimous';
      break;
    case ProtoStrategy.ANY_APPROVED:
      strategy = 'weighted_average';
      break;
    default:
      throw new OrchError(Errors.BAD_REQUEST, `unknown consensus strategy ${strategyNo}`);
  }
  return {
    spec: {
      strategy,
      threshold,
      ...(agreement !== undefined ? { min_agreement_confidence: agreement } : {}),
      ...(n !== undefined ? { n } : {}),
      min_judges_required: Math.max(1, min),
      confidence_weighting: { agreement_factor: 0.7, self_confidence_factor: 0.3 },
    },
    anyApproved: strategyNo === ProtoStrategy.ANY_APPROVED,
  };
}

/** computeConsensus, with ANY_APPROVED as described in the header. */
export function combine(spec: ConsensusSpec, anyApproved: boolean, judges: JudgeInput[]): ConsensusResult {
  if (!anyApproved) return computeConsensus(spec, judges);
  const approving = judges.filter((j) => atLeast(j.verdict.score, spec.threshold));
  const base = computeConsensus(spec, approving.length > 0 ? approving : judges);
  const agreed = spec.min_agreement_confidence === undefined || atLeast(base.confidence, spec.min_agreement_confidence);
  return {
    ...base,
    binary_valid: approving.length > 0 && agreed,
    metadata: { ...base.metadata, any_approved: true, approving: approving.map((j) => j.agent_id) },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class JudgeService {
  constructor(private readonly deps: JudgeServiceDeps) {}

  /** `signal`: the caller went away (a cancelled gRPC call); the judges still running are cancelled. */
  async validate(tenant: string, req: ValidateInput, signal?: AbortSignal): Promise<ValidateResult> {
    // Validate everything before any judge starts.
    if (typeof req.output !== 'string') throw new OrchError(Errors.BAD_REQUEST, 'output must be a string');
    if (!Array.isArray(req.judges) || req.judges.length === 0) throw new OrchError(Errors.BAD_REQUEST, 'at least one judge is required');
    if (req.judges.length > MAX_JUDGES) throw new OrchError(Errors.BAD_REQUEST, `at most ${MAX_JUDGES} judges`);
    const { spec, anyApproved } = consensusSpecOf(req.consensus);
    let context: Record<string, unknown> = {};
    if (req.context_json) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(req.context_json);
      } catch {
        throw new OrchError(Errors.BAD_REQUEST, 'context_json is not valid JSON');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new OrchError(Errors.BAD_REQUEST, 'context_json must be a JSON object');
      context = parsed as Record<string, unknown>;
    }
    const judges = req.judges.map((j, i) => {
      if (typeof j.agent_id !== 'string' || j.agent_id.trim() === '') throw new OrchError(Errors.BAD_REQUEST, `judges[${i}].agent_id is required`);
      const w = j.weight ?? 0;
      if (!Number.isFinite(w) || w < 0) throw new OrchError(Errors.BAD_REQUEST, `judges[${i}].weight must not be negative`);
      const template = j.input_template || DEFAULT_JUDGE_TEMPLATE;
      const bad = checkTemplate(template);
      if (bad !== undefined) throw new OrchError(Errors.BAD_REQUEST, `judges[${i}].input_template does not parse: ${bad}`);
      return { agent_id: j.agent_id.trim(), template, weight: w === 0 ? 1 : w };
    });
    const svc = this.deps.executions();
    if (!svc) throw new OrchError(Errors.UNAVAILABLE, 'agent executions are not available on this node');
    // Every judge agent must exist before any starts (NOT_FOUND otherwise).
    const agents = await Promise.all(judges.map((j) => this.deps.agents.getManifest(tenant, j.agent_id)));

    const results = await Promise.all(
      judges.map(async (j, i): Promise<{ view: JudgeResultView; input?: JudgeInput }> => {
        const agent = agents[i]!;
        const executionId = randomUUID();
        const scope = { output: req.output, task: req.task, context, input: req.output, workflow: { context, storage: { shared_volumes: {} } }, blackboard: {}, state: {}, human: {}, execution: { id: executionId } } as TemplateScope;
        const failed = (error: string): { view: JudgeResultView } => ({
          view: { agent_id: j.agent_id, score: 0, confidence: 0, reasoning: '', binary_valid: false, weight: j.weight, execution_id: executionId, error },
        });
        let view: ExecutionView;
        try {
          view = await this.run(svc, tenant, agent.agent_id, executionId, renderTemplate(j.template, scope), signal);
        } catch (err) {
          return failed(err instanceof Error ? err.message : String(err));
        }
        if (view.status !== 'completed') return failed(`judge execution ${view.status}${view.reason ? `: ${view.reason}` : ''}`);
        const parsed = parseJudgeOutput(view.final_output ?? '');
        if (!parsed.ok) return failed(parsed.error);
        const v = parsed.verdict;
        return {
          view: { agent_id: j.agent_id, score: v.score, confidence: v.confidence, reasoning: v.reasoning, binary_valid: atLeast(v.score, spec.threshold), weight: j.weight, execution_id: executionId },
          input: { agent_id: j.agent_id, weight: j.weight, verdict: v },
        };
      }),
    );
    const individual = results.map((r) => r.view);
    const done = results.flatMap((r) => (r.input ? [r.input] : []));
    const shortfall = judgeShortfall(spec, done.length);
    if (shortfall !== undefined) {
      return { score: 0, confidence: 0, binary_valid: false, reasoning: `${shortfall}: ${individual.filter((r) => r.error).map((r) => `${r.agent_id}: ${r.error}`).join('; ')}`, individual_results: individual };
    }
    const c = combine(spec, anyApproved, done);
    const reasoning = [
      `${anyApproved ? 'any_approved' : c.strategy}: score ${c.score.toFixed(3)}, confidence ${c.confidence.toFixed(3)}, threshold ${spec.threshold} → ${c.binary_valid ? 'valid' : 'not valid'} (${done.length} of ${judges.length} judges)`,
      ...individual.map((r) => (r.error ? `${r.agent_id}: not counted (${r.error})` : `${r.agent_id} (${r.score}): ${r.reasoning}`)),
    ].join('\n');
    return { score: c.score, confidence: c.confidence, binary_valid: c.binary_valid, reasoning, individual_results: individual, consensus: c };
  }

  /** Starts one judge execution and waits for it to end (cancelled after the timeout). */
  private async run(svc: ExecutionService, tenant: string, agentId: string, executionId: string, input: string, signal?: AbortSignal): Promise<ExecutionView> {
    if (signal?.aborted) throw new Error('the caller cancelled the validation');
    await svc.start({ tenant, agentId, input, executionId });
    const deadline = Date.now() + (this.deps.judgeTimeoutMs ?? 300_000);
    const pollMs = this.deps.pollMs ?? 100;
    for (;;) {
      const view = await svc.get(tenant, executionId);
      if (TERMINAL.has(view.status)) return view;
      if (signal?.aborted) {
        await svc.cancel(tenant, executionId).catch(() => undefined);
        throw new Error('the caller cancelled the validation');
      }
      if (Date.now() > deadline) {
        await svc.cancel(tenant, executionId).catch(() => undefined);
        throw new Error(`judge timed out after ${Math.round((this.deps.judgeTimeoutMs ?? 300_000) / 1000)} s`);
      }
      await sleep(pollMs);
    }
  }
}
