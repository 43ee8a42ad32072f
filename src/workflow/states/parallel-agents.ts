// The ParallelAgents state (seed 002): every judge runs as its own agent execution, all at once, each with its own
// timeout (timeout_seconds) and poll interval; each judge's final output is parsed with parseJudgeOutput (invalid
// JSON counts as not completed), fewer than min_judges_required completed judges fail the state, and the rest go
// through computeConsensus. Blackboard: `consensus` {score, confidence, strategy, metadata}, `individual_results`
// (agent_id, score, confidence, reasoning), `agents` (agent_id, output, weight), `status`.
import type { ParallelAgentsState } from '../manifest/types.ts';
import type { StateResult, StateRunner } from '../engine/runner-types.ts';
import { idFromVisit } from '../engine/ids.ts';
import { computeConsensus, judgeShortfall, parseJudgeOutput, type JudgeInput } from '../consensus.ts';
import { runAgentExecution, type AgentExecutionDeps } from './agent-execution.ts';

interface JudgeRun {
  agent_id: string;
  weight: number;
  output: unknown;
  input?: JudgeInput;
  error?: string;
}

export function parallelAgentsRunner(deps: AgentExecutionDeps): StateRunner<ParallelAgentsState> {
  return async (state, ctx): Promise<StateResult> => {
    const runs = await Promise.all(
      state.agents.map(async (j, i): Promise<JudgeRun> => {
        const agent = ctx.render(j.agent).trim();
        const timeout = AbortSignal.timeout(j.timeout_seconds * 1000);
        const signal = AbortSignal.any([ctx.signal, timeout]);
        try {
          const view = await runAgentExecution(deps, {
            tenantId: ctx.tenantId,
            agent,
            executionId: idFromVisit(ctx.visitKey, `judge:${i}`),
            workflowExecutionId: ctx.workflowExecutionId,
            input: j.input !== undefined ? ctx.render(j.input) : '',
            intent: ctx.intent,
            pollMs: j.poll_interval_ms,
            signal,
            wake: ctx.wake,
          });
          const text = view.final_output ?? '';
          if (view.status !== 'completed') return { agent_id: agent, weight: j.weight, output: text, error: `execution ${view.status}: ${view.reason ?? ''}` };
          const parsed = parseJudgeOutput(text);
          if (!parsed.ok) return { agent_id: agent, weight: j.weight, output: text, error: parsed.error };
          return { agent_id: agent, weight: j.weight, output: parsed.verdict, input: { agent_id: agent, weight: j.weight, verdict: parsed.verdict } };
        } catch (err) {
          if (ctx.signal.aborted) throw ctx.signal.reason;
          const msg = timeout.aborted ? `judge timed out after ${j.timeout_seconds} s` : (err as Error).message;
          return { agent_id: agent, weight: j.weight, output: null, error: msg };
        }
      }),
    );
    const done = runs.filter((r): r is JudgeRun & { input: JudgeInput } => r.input !== undefined);
    const agents = runs.map((r) => ({ agent_id: r.agent_id, output: r.output, weight: r.weight, ...(r.error ? { error: r.error } : {}) }));
    const individual = done.map((r) => ({ agent_id: r.agent_id, score: r.input.verdict.score, confidence: r.input.verdict.confidence, reasoning: r.input.verdict.reasoning }));
    const shortfall = judgeShortfall(state.consensus, done.length);
    if (shortfall !== undefined || done.length === 0) {
      const error = shortfall ?? 'no judge completed';
      return {
        output: { status: 'failed', error, individual_results: individual, agents },
        outcome: { kind: 'ParallelAgents', status: 'failed' },
        error,
      };
    }
    const c = computeConsensus(state.consensus, done.map((r) => r.input));
    return {
      output: {
        status: 'success',
        consensus: { score: c.score, confidence: c.confidence, strategy: c.strategy, binary_valid: c.binary_valid, metadata: c.metadata },
        individual_results: individual,
        agents,
      },
      outcome: {
        kind: 'ParallelAgents',
        status: 'success',
        score: c.score,
        confidence: c.confidence,
        consensus: { score: c.score, confidence: c.confidence, threshold: state.consensus.threshold, scores: individual.map((r) => r.score) },
      },
    };
  };
}
