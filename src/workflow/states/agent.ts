// The Agent state (seed 002): one agent execution of issue 2 with the rendered `input`, steered by the state's
// `intent` (or the run's), waited for until terminal. Blackboard: `status` (success|failed), `output` (the final
// text), `score`, `iterations`, plus `execution_id`. The score is the mean score of the semantic judges of the last
// iteration (as the execution journaled them); without semantic validation it is 1.0 when the execution completed
// (every validation rule passed) and 0.0 otherwise.
import type { AgentState } from '../manifest/types.ts';
import type { StateRunner } from '../engine/runner-types.ts';
import { idFromVisit } from '../engine/ids.ts';
import { judgedScore, runAgentExecution, stateVolumes, volumesReleased, type AgentExecutionDeps } from './agent-execution.ts';

export function agentRunner(deps: AgentExecutionDeps): StateRunner<AgentState> {
  return async (state, ctx) => {
    const executionId = idFromVisit(ctx.visitKey);
    // The state's volumes: the workflow's spec.storage volumes, mounted into the execution with their access modes.
    const volumes = stateVolumes(state.volumes, ctx);
    const view = await runAgentExecution(deps, {
      tenantId: ctx.tenantId,
      agent: ctx.render(state.agent).trim(),
      executionId,
      workflowExecutionId: ctx.workflowExecutionId,
      input: state.input !== undefined ? ctx.render(state.input) : '',
      intent: state.intent !== undefined ? ctx.render(state.intent) : ctx.intent,
      signal: ctx.signal,
      volumes,
      wake: ctx.wake,
    });
    // The next state may mount the same volumes: wait until this execution has unmounted them.
    if (volumes.length > 0 && deps.db && !(await volumesReleased(deps.db, executionId, ctx.signal))) {
      ctx.logger.warn({ execution: executionId }, 'the agent execution has not released its volumes after 30 s');
    }
    const ok = view.status === 'completed';
    const judged = deps.db ? await judgedScore(deps.db, executionId, view.iteration) : undefined;
    const score = judged?.score ?? (ok ? 1 : 0);
    const output = {
      status: ok ? 'success' : 'failed',
      output: view.final_output ?? '',
      score,
      iterations: view.iteration,
      execution_id: executionId,
      ...(ok ? {} : { error: view.reason ?? view.status }),
    };
    return {
      output,
      outcome: { kind: 'Agent', status: ok ? 'success' : 'failed', score, ...(judged?.confidence !== undefined ? { confidence: judged.confidence } : {}) },
      ...(ok ? {} : { error: `agent execution ${executionId} ${view.status}: ${view.reason ?? ''}`.trim() }),
    };
  };
}
