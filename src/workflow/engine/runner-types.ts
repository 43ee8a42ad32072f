// The contract between the WorkflowActor (the engine) and the runners of the state kinds. A runner performs one
// visit of one state and returns what the engine writes to the blackboard under the state's name, plus the facts
// the transition conditions read. The engine owns ordering, persistence, timeouts, visits and transitions; a runner
// owns only the side effect. Human states are not run by a runner: the engine suspends on them (approvals).
//
// Durability: a node may die after a runner started its side effect and before the engine wrote the result. The
// engine then runs the same visit again with the same `visitKey`; a runner whose side effect must not repeat (a
// child workflow, an agent execution) derives its ids from `visitKey` so the second run finds the first one's work.
import type { Logger } from '../../logging/logger.ts';
import type { StateKind, WorkflowState } from '../manifest/types.ts';
import type { ShellCommand } from '../template/shell.ts';

/** What the transition conditions of seed 002 read from a finished state. */
export interface StateOutcome {
  kind: StateKind;
  status: 'success' | 'failed';
  /** System, ContainerRun. */
  exit_code?: number;
  /** Agent (validation score 0.0-1.0), ParallelAgents (consensus score). */
  score?: number;
  /** Agent, ParallelAgents (consensus confidence). */
  confidence?: number;
  /** ParallelAgents: consensus threshold and each judge's score, for all_approved / any_rejected. */
  consensus?: { score: number; confidence: number; threshold: number; scores: number[] };
  /** Human: the response text (signal, approve/reject, or default_response on timeout). */
  response?: string;
}

export interface StateResult {
  /** Written to blackboard[stateName] (the seed's per-kind shape: status/output/score/iterations, stdout/…). */
  output: unknown;
  outcome: StateOutcome;
  /** A human-readable reason when status is failed (logged and shown in the execution detail). */
  error?: string;
  /** Keys merged into the blackboard besides blackboard[stateName] (the `update_blackboard` built-in, result_key). */
  blackboardPatch?: Record<string, unknown>;
  /** Keys merged into `workflow.context` (the `update_context` built-in). */
  contextPatch?: Record<string, unknown>;
}

export interface StateRunContext {
  workflowExecutionId: string;
  tenantId: string;
  stateName: string;
  /** 1 for the first entry of this state in this run, 2 for the second, ... */
  visit: number;
  /** `${workflowExecutionId}:${stateName}:${visit}`: stable across a crash and a re-run of the same visit. */
  visitKey: string;
  /** Renders a Handlebars template against the current scope (missing keys give a placeholder naming the key). */
  render(template: string): string;
  /** Renders a template that is a shell command: values become ORCH_VALUE_<n> environment variables referenced from
   * the script, never shell code (src/workflow/template/shell.ts). Throws on a NUL byte or a broken template. */
  renderShell(template: string): ShellCommand;
  /** Aborted when the state's timeout elapses or the workflow is cancelled; the runner stops its side effect. */
  signal: AbortSignal;
  /** Volume ids of the workflow's spec.storage (`workspace`, and shared volumes by name), when declared. */
  storage: { workspace?: string; shared: Record<string, string> };
  /** Subworkflow nesting: 0 for a top-level run; names of the workflows above this one, outermost first. */
  depth: number;
  ancestry: string[];
  logger: Logger;
  /** The run's intent (the caller's), for states whose own `intent` template is absent (Agent). */
  intent?: string;
  /**
   * Waits until `topic` is woken on this node (a message to this run: `execution:<id>` when an Agent state's
   * execution ended, wherever it ran), `maxMs` passes (a safety-net re-read) or `signal` aborts. Absent outside the
   * engine (runner tests): the runner polls.
   */
  wake?: (topic: string, maxMs: number, signal: AbortSignal) => Promise<void>;
  /**
   * A visit that only waits for something recorded elsewhere (a child run's end) may leave memory once it waited
   * `afterMs` (spec.workflow.park_after_seconds; parking.ts): `park` answers true when the run is now parked — the
   * runner then throws Passivated, and the visit is run again from its row when a message (or the safety-net scan)
   * brings the run back, so what it waits for must be found again from its visitKey. Absent: the node does not park.
   */
  idle?: IdleVisit;
}

export interface IdleVisit {
  afterMs: number;
  /** `stillWaiting()` is asked once nothing can be missed any more: false (a wake-up came) leaves the run in memory. */
  park(stillWaiting: () => boolean): Promise<boolean>;
}

export type StateRunner<S extends WorkflowState = WorkflowState> = (state: S, ctx: StateRunContext) => Promise<StateResult>;
