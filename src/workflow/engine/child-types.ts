// The engine's side of the Subworkflow state (seed 002, format 1.2): how the Subworkflow runner starts, waits for
// and cancels a child workflow run. The WorkflowExecutionService implements it; the runner in
// ../states/subworkflow.ts depends only on this interface, so its logic is testable before the engine exists.

import type { IdleVisit } from './runner-types.ts';

export interface ChildStartRequest {
  /** UUID v5 of the parent's visitKey: a re-run of the same visit after a crash finds the same child. */
  childExecutionId: string;
  /** Deployed workflow name or UUID (the state's `workflow_id`). */
  workflow: string;
  tenantId: string;
  /** The rendered `input` of the state (parsed as JSON when it is JSON, else the text), or undefined. */
  input: unknown;
  parentExecutionId: string;
  /** Nesting depth of the child: the parent's depth + 1. */
  depth: number;
  /** The parent run's ancestry (its ctx.ancestry: the workflow names above the parent, outermost first). The
   * implementation knows the parent run, so it appends the parent's own workflow name to form the child's ancestry,
   * and refuses a child whose (resolved) workflow name is already in that list: a cycle. */
  ancestry: string[];
}

export interface ChildTerminal {
  status: 'completed' | 'failed' | 'cancelled';
  final_output: unknown;
  blackboard: Record<string, unknown>;
}

export interface ChildWorkflows {
  /** Starts the child run with this id, or does nothing if it already exists (idempotent on childExecutionId). Throws a descriptive error when the workflow is not deployed. */
  start(req: ChildStartRequest): Promise<void>;
  /** Resolves when the child run is terminal. With `idle`: throws Passivated once the parent run parked instead. */
  waitTerminal(childExecutionId: string, signal: AbortSignal, idle?: IdleVisit): Promise<ChildTerminal>;
  cancel(childExecutionId: string): Promise<void>;
}
