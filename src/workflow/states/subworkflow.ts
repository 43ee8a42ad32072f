// The Subworkflow state (seed 002, format 1.2): starts a deployed workflow as a child run.
//   blocking        — waits until the child is terminal; on_success when it completed, on_failure otherwise.
//                     Blackboard: {status, result (the child's final_output), child_execution_id}; with result_key
//                     the child's whole final blackboard is also written to blackboard.<result_key> (blackboardPatch).
//   fire_and_forget — success as soon as the child started; transitions are evaluated at once.
// The child id is UUID v5 of ctx.visitKey, and ChildWorkflows.start is idempotent on it: a visit re-run after a
// crash waits for the child its first run started instead of starting a second one.
// Limits: nesting deeper than 10 fails with SubworkflowDepthExceeded; a workflow already among the ancestors is a
// cycle, detected here at run time before anything starts. When the parent state times out (or the parent run is
// cancelled) while a blocking child runs, the child is cancelled. The child's own timeouts are its own.
import { Passivated } from '../../actors/kind.ts';
import type { ChildWorkflows } from '../engine/child-types.ts';
import { idFromVisit } from '../engine/ids.ts';
import type { StateResult, StateRunContext, StateRunner } from '../engine/runner-types.ts';
import type { SubworkflowState } from '../manifest/types.ts';

/** Seed 002 limit: "child nesting deeper than 10" (a top-level run is depth 0, its child depth 1). */
export const MAX_SUBWORKFLOW_DEPTH = 10;

export interface SubworkflowDeps {
  children: ChildWorkflows;
}

function failed(error: string, output: Record<string, unknown> = {}): StateResult {
  return { output: { status: 'failed', ...output, error }, outcome: { kind: 'Subworkflow', status: 'failed' }, error };
}

/** The rendered `input` template: JSON when it parses as JSON (objects for the child's input_schema), else text. */
function childInput(state: SubworkflowState, ctx: StateRunContext): unknown {
  if (state.input === undefined) return {};
  const text = ctx.render(state.input);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export function subworkflowRunner(deps: SubworkflowDeps): StateRunner<SubworkflowState> {
  return async (state: SubworkflowState, ctx: StateRunContext): Promise<StateResult> => {
    const workflow = ctx.render(state.workflow_id).trim();
    const depth = ctx.depth + 1;
    if (depth > MAX_SUBWORKFLOW_DEPTH) {
      return failed(`SubworkflowDepthExceeded: starting ${workflow} would nest ${depth} levels deep (limit ${MAX_SUBWORKFLOW_DEPTH})`);
    }
    const cycleAt = ctx.ancestry.indexOf(workflow);
    if (cycleAt >= 0) {
      const path = [...ctx.ancestry.slice(cycleAt), workflow].join(' -> ');
      return failed(`SubworkflowCycle: circular subworkflow composition ${path} (workflow ${workflow} is already running above this state)`);
    }

    const childExecutionId = idFromVisit(ctx.visitKey);
    let input: unknown;
    try {
      input = childInput(state, ctx);
      await deps.children.start({
        childExecutionId,
        workflow,
        tenantId: ctx.tenantId,
        input,
        parentExecutionId: ctx.workflowExecutionId,
        depth,
        ancestry: ctx.ancestry,
      });
    } catch (e) {
      return failed(`starting child workflow ${workflow} failed: ${message(e)}`);
    }
    ctx.logger.info({ child_execution_id: childExecutionId, workflow, mode: state.mode, depth }, 'child workflow started');

    if (state.mode === 'fire_and_forget') {
      return { output: { status: 'success', child_execution_id: childExecutionId }, outcome: { kind: 'Subworkflow', status: 'success' } };
    }

    let terminal: Awaited<ReturnType<ChildWorkflows['waitTerminal']>>;
    try {
      terminal = await deps.children.waitTerminal(childExecutionId, ctx.signal, ctx.idle);
    } catch (e) {
      // Parked: the run left memory; this visit runs again (and finds this child) when the child's end brings it back.
      if (e instanceof Passivated) throw e;
      if (ctx.signal.aborted) {
        // Parent state timed out or the parent run was cancelled: the child must not outlive the state.
        await deps.children.cancel(childExecutionId).catch((err: unknown) =>
          ctx.logger.warn({ child_execution_id: childExecutionId, err: message(err) }, 'cancelling the child workflow failed'));
        const reason = ctx.signal.reason instanceof Error ? ctx.signal.reason.message : 'the state was aborted';
        return failed(`${reason}; child workflow ${childExecutionId} cancelled`, { child_execution_id: childExecutionId, result: null });
      }
      return failed(`waiting for child workflow ${childExecutionId} failed: ${message(e)}`, { child_execution_id: childExecutionId, result: null });
    }
    const ok = terminal.status === 'completed';
    const output = { status: ok ? 'success' : 'failed', result: terminal.final_output ?? null, child_execution_id: childExecutionId, child_status: terminal.status };
    return {
      output,
      outcome: { kind: 'Subworkflow', status: ok ? 'success' : 'failed' },
      ...(ok ? {} : { error: `child workflow ${workflow} (${childExecutionId}) ended ${terminal.status}` }),
      ...(state.result_key !== undefined ? { blackboardPatch: { [state.result_key]: terminal.blackboard } } : {}),
    };
  };
}
