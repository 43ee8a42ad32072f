// One workflow run driven by its WorkflowActor: run the current state's visit, write the outcome, the transition
// and the next state's entry in one committed step, then go on. The row (through the StepWriter) is the truth: a
// run resumed on another incarnation starts from `current_state` with the same visit (and so the same visitKey),
// and since each step's events carry unique keys and are written with the row, no state is recorded twice.
import type { Logger } from '../../logging/logger.ts';
import type { Db, Queryable } from '../../storage/db.ts';
import type { RowFence } from '../../storage/row-lease.ts';
import type { HumanState, StateKind, WorkflowState } from '../manifest/types.ts';
import { buildScope, type TemplateScope } from '../template/scope.ts';
import { renderShellTemplate, renderTemplate } from '../template/render.ts';
import { selectTransition } from '../conditions.ts';
import { renderFinalOutput } from '../output.ts';
import { getApproval, insertApproval, type ApprovalAnswer } from '../approvals/repo.ts';
import { CancelledByUser } from '../../agents/execution/errors.ts';
import type { NewWorkflowEvent } from './events.ts';
import { idFromVisit, visitKeyOf } from './ids.ts';
import type { WorkflowExecutionRow } from './repo.ts';
import type { IdleVisit, StateResult, StateRunContext, StateRunner } from './runner-types.ts';
import type { TerminalCache, Wakers } from './wakers.ts';
import type { Teller } from '../../actors/tell.ts';
import { Passivated } from '../../actors/kind.ts';
import type { Parker } from './parking.ts';
import type { RunSnapshot, StepWriter, WrittenStep } from './writer.ts';
import { StorageProvisionError, type WorkflowStorageIds } from './storage.ts';
import { inWorkflowRunSpan, inWorkflowStateSpan, workflowFinished } from '../../observability/runs.ts';
import { isBuiltinCommand } from '../states/system.ts';
import { blackboardPatch, PATCH_MIN_BYTES } from './blackboard-patch.ts';
import { isoNow } from '../../util/iso-now.ts';

const DEFAULT_STATE_TIMEOUT_S = 300;
/** The safety-net poll of a waiting run (spec.workflow.poll_seconds). */
const DEFAULT_POLL_MS = 30_000;

export interface EngineDeps {
  db: Db;
  writer: StepWriter;
  wakers: Wakers;
  logger: Logger;
  /** Runners of every kind but Human (which the engine handles itself); a missing kind fails its state. */
  runners: Partial<Record<StateKind, StateRunner<never>>>;
  /** A Human state with a timeout wrote its approval: start its ApprovalActor (idempotent). */
  onApprovalCreated: (approvalId: string) => void;
  /** How often a waiting run re-reads its approval: only a safety net, since an answer given on any node wakes it at
   * once (a TellActor to this node when given elsewhere). spec.workflow.poll_seconds; default 30 s. */
  pollMs?: number;
  /** Parks runs that wait on a Human state past its delay (parking.ts); absent: waiting runs stay in memory. */
  parker?: Parker;
  /** Tells a parent run (wherever it is held) that this child ended; absent: only this node's waiters are woken. */
  teller?: Teller;
  /** Where finished runs leave their terminal snapshot for in-process waiters (wakes `terminal:<id>`). */
  terminals?: TerminalCache;
  /** Volume ids of spec.storage, when the storage capability resolved them. */
  storageOf?: (row: WorkflowExecutionRow) => { workspace?: string; shared: Record<string, string> };
  /** Makes (or finds, on a resumed run) the spec.storage volumes before the first state runs (storage.ts). */
  storage?: { provision(run: WorkflowExecutionRow): Promise<WorkflowStorageIds> };
}

class StateTimedOut extends Error {
  constructor(state: string, seconds: number) {
    super(`state "${state}" timed out after ${seconds} s`);
    this.name = 'StateTimedOut';
  }
}

function failedResult(kind: StateKind, message: string, output?: unknown): StateResult {
  return { output: output ?? { status: 'failed', error: message }, outcome: { kind, status: 'failed' }, error: message };
}

function abortPromise(signal: AbortSignal): { promise: Promise<never>; dispose: () => void } {
  let onAbort: () => void = () => undefined;
  const promise = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  promise.catch(() => undefined);
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) };
}

/**
 * A state that acts on nothing outside the run (a built-in System command): the engine may run it before the step
 * that entered it is committed, because running it neither acts nor announces; its own step is still written and
 * committed in order after that one, so a crash leaves the same prefix of committed steps as without pipelining.
 */
function pipelinable(state: WorkflowState): boolean {
  return state.kind === 'System' && isBuiltinCommand(state.command);
}

export class WorkflowRun {
  private readonly snap: RunSnapshot;
  private lastSeq: number;
  /** Steps of this run written but not yet known committed, oldest first (pipelined built-in steps). */
  private readonly outstanding: WrittenStep[] = [];
  /** The blackboard as of the last step handed to the writer (or as read from the row): a step sends what changed. */
  private writtenBlackboard: Record<string, unknown>;
  /** About how many bytes of JSON the blackboard is (its size when read, plus every patch since: replaced keys counted
   * twice); a patch is sent only from PATCH_MIN_BYTES on (blackboard-patch.ts). */
  private blackboardBytes: number;
  /** The run's child logger (log), made on first use: most runs never log, and a pino child serializes and redacts
   * its bindings when made (issue 16: four children per run over HTTP were ~2 % of the node's time at c = 64). */
  private runLog: Logger | undefined;
  private signal: AbortSignal = new AbortController().signal;
  /** spec.storage volume ids, once provisioned by this incarnation. */
  private storageIds: WorkflowStorageIds | undefined;
  /** The deadline of the visit this run was parked in (its row's wake_at), for the first visit this incarnation
   * runs: that visit goes on, so its timeout counts from when it began, not from when the run came back. */
  private resumedDeadline: number | undefined;
  /** The approval of the visit a parked run waits in, read by the claim that brought it back (parking.ts deliver). */
  private answer: ApprovalAnswer | undefined;

  constructor(
    private readonly deps: EngineDeps,
    private readonly fence: RowFence,
    private readonly row: WorkflowExecutionRow,
  ) {
    this.snap = {
      status: row.status,
      current_state: row.current_state,
      blackboard: row.blackboard ?? {},
      context: row.context ?? {},
      visits: row.visits ?? {},
      total_transitions: row.total_transitions,
      feedback: row.feedback,
      human_feedback: row.human_feedback,
      final_output: row.final_output,
      error: row.error,
    };
    this.writtenBlackboard = this.snap.blackboard;
    this.blackboardBytes = JSON.stringify(this.snap.blackboard).length;
    this.lastSeq = row.last_seq;
    this.resumedDeadline = row.wake_at ? new Date(row.wake_at).getTime() : undefined;
    this.answer = row.answer ?? undefined;
  }

  private get log(): Logger {
    return (this.runLog ??= this.deps.logger.child({ workflow_execution: this.row.id, workflow: this.row.workflow_name }));
  }

  /** Runs until the row is terminal. Throws the abort reason when stopped for a hand-over (shutdown, lost lease). */
  run(signal: AbortSignal): Promise<void> {
    return inWorkflowRunSpan(this.row, () => this.runStates(signal));
  }

  private async runStates(signal: AbortSignal): Promise<void> {
    this.signal = signal;
    const states = this.row.manifest.spec.states;
    if (this.deps.storage && this.row.manifest.spec.storage && (this.snap.status === 'running' || this.snap.status === 'waiting_for_human_input')) {
      try {
        this.storageIds = await this.deps.storage.provision(this.row);
      } catch (err) {
        if (!(err instanceof StorageProvisionError)) throw err;
        await this.finish('failed', [], `spec.storage: ${err.message}`);
        return;
      }
    }
    while (this.snap.status === 'running' || this.snap.status === 'waiting_for_human_input') {
      if (signal.aborted) {
        await this.stopped();
        return;
      }
      const name = this.snap.current_state ?? this.row.manifest.spec.initial_state;
      const state = states[name];
      if (!state) {
        await this.finish('failed', [], `state "${name}" does not exist in the manifest`);
        return;
      }
      // Anything but a built-in may act (start a sandbox, ask a human, start a child): the steps before it are
      // committed first.
      if (!pipelinable(state)) await this.settle();
      const visit = this.snap.visits[name] ?? 1;
      let result: StateResult;
      let human: { feedback: string | null; approval: ApprovalAnswer } | undefined;
      try {
        if (state.kind === 'Human') {
          const h = await inWorkflowStateSpan(this.row, name, state.kind, visit, async () => {
            const r = await this.human(state, name, visit);
            return { ...r, error: r.result.error };
          });
          result = h.result;
          human = h.human;
        } else {
          result = await inWorkflowStateSpan(this.row, name, state.kind, visit, () => this.runState(state, name, visit));
        }
      } catch (err) {
        if (signal.aborted) {
          await this.stopped();
          return;
        }
        throw err;
      }
      if (signal.aborted) {
        await this.stopped();
        return;
      }
      await this.advance(name, visit, state, result, human);
    }
  }

  /** The abort came from a cancel (record it) or a hand-over (write nothing; the next owner resumes). */
  private async stopped(): Promise<void> {
    if (this.signal.reason instanceof CancelledByUser) {
      await this.finish('cancelled', [], 'cancelled');
      return;
    }
    throw this.signal.reason;
  }

  private scope(): TemplateScope {
    return buildScope({
      executionId: this.row.id,
      ...(this.row.intent !== null ? { intent: this.row.intent } : {}),
      input: this.row.input,
      context: this.snap.context,
      storage: this.storage(),
      blackboard: this.snap.blackboard,
      ...(this.snap.feedback !== null ? { feedback: this.snap.feedback } : {}),
      ...(this.snap.human_feedback !== null ? { humanFeedback: this.snap.human_feedback } : {}),
    });
  }

  private storage(): { workspace?: string; shared: Record<string, string> } {
    return this.storageIds ?? this.deps.storageOf?.(this.row) ?? { shared: {} };
  }

  private async runState(state: WorkflowState, name: string, visit: number): Promise<StateResult> {
    const runner = this.deps.runners[state.kind] as StateRunner | undefined;
    if (!runner) return failedResult(state.kind, `state kind ${state.kind} is not available on this node`);
    if (pipelinable(state)) return this.runBuiltin(runner, state, name, visit);
    const seconds = state.timeout_seconds ?? DEFAULT_STATE_TIMEOUT_S;
    const deadline = this.resumedDeadline ?? Date.now() + seconds * 1000;
    this.resumedDeadline = undefined;
    // One controller per visit, aborted by the state timeout or by the run's own abort (cancel, hand-over).
    const visitAbort = new AbortController();
    let timedOut: StateTimedOut | undefined;
    const timer = setTimeout(() => visitAbort.abort((timedOut = new StateTimedOut(name, seconds))), Math.max(0, deadline - Date.now()));
    const onRunAbort = (): void => visitAbort.abort(this.signal.reason);
    if (this.signal.aborted) onRunAbort();
    else this.signal.addEventListener('abort', onRunAbort, { once: true });
    const ctx = this.visitContext(name, visit, visitAbort.signal, deadline);
    const aborted = abortPromise(visitAbort.signal);
    try {
      const result = await Promise.race([runner(state, ctx), aborted.promise]);
      if (this.signal.aborted) throw this.signal.reason;
      if (timedOut) return failedResult(state.kind, timedOut.message, result.output);
      return result;
    } catch (err) {
      if (this.signal.aborted) throw this.signal.reason;
      if (err instanceof Passivated && !timedOut) throw err;
      if (timedOut) return failedResult(state.kind, timedOut.message);
      return this.runnerFailed(state, name, err);
    } finally {
      clearTimeout(timer);
      this.signal.removeEventListener('abort', onRunAbort);
      aborted.dispose();
    }
  }

  /**
   * A built-in command: computed at once from the snapshot, so there is nothing to time out or abort while it runs
   * (no visit controller, no timer: they were a measurable part of a lone run's step).
   */
  private async runBuiltin(runner: StateRunner, state: WorkflowState, name: string, visit: number): Promise<StateResult> {
    this.resumedDeadline = undefined;
    try {
      const result = await runner(state, this.visitContext(name, visit, this.signal));
      if (this.signal.aborted) throw this.signal.reason;
      return result;
    } catch (err) {
      if (this.signal.aborted) throw this.signal.reason;
      return this.runnerFailed(state, name, err);
    }
  }

  private runnerFailed(state: WorkflowState, name: string, err: unknown): StateResult {
    const message = `state "${name}" failed: ${(err as Error)?.message ?? String(err)}`;
    this.log.warn({ err, state: name }, 'state runner failed');
    return failedResult(state.kind, message);
  }

  /** What a runner gets for one visit; `deadline` (when the visit may wait) lets a waiting visit park the run. */
  private visitContext(name: string, visit: number, signal: AbortSignal, deadline?: number): StateRunContext {
    // Built on the first template that needs it (none for literal ones); the snapshot does not change during a visit.
    let built: TemplateScope | undefined;
    const scope = (): TemplateScope => (built ??= this.scope());
    let stateLog: Logger | undefined;
    const log = (): Logger => this.log;
    const ctx: StateRunContext = {
      workflowExecutionId: this.row.id,
      tenantId: this.row.tenant_id,
      stateName: name,
      visit,
      visitKey: visitKeyOf(this.row.id, name, visit),
      render: (template) => renderTemplate(template, scope),
      renderShell: (template) => renderShellTemplate(template, scope),
      signal,
      storage: this.storage(),
      depth: this.row.depth,
      // The names above a child of this state: this run's ancestry plus its own name (cycle detection).
      ancestry: [...(this.row.ancestry ?? []), this.row.workflow_name],
      // A child logger per visit only when a runner logs (most update_blackboard steps never do).
      get logger(): Logger {
        return (stateLog ??= log().child({ state: name, visit }));
      },
      ...(this.row.intent !== null ? { intent: this.row.intent } : {}),
      wake: (topic, maxMs, s) => this.deps.wakers.wait(topic, Math.min(maxMs, this.deps.pollMs ?? DEFAULT_POLL_MS), s).then(() => undefined),
      ...(deadline !== undefined && this.deps.parker && Number.isFinite(this.deps.parker.parkAfterMs) ? { idle: this.idleVisit(this.deps.parker, deadline) } : {}),
    };
    return ctx;
  }

  /** How a waiting visit parks the run: status 'running', back at the latest by the visit's deadline. */
  private idleVisit(parker: Parker, deadline: number): IdleVisit {
    return {
      afterMs: parker.parkAfterMs,
      park: (stillWaiting) => parker.park(this.fence, () => stillWaiting() && !this.signal.aborted, 'running', new Date(deadline)),
    };
  }

  /** Suspends on a Human state: write the approval (once per visit) and the waiting status, then wait for it. */
  private async human(state: HumanState, name: string, visit: number): Promise<{ result: StateResult; human?: { feedback: string | null; approval: ApprovalAnswer } }> {
    const approvalId = idFromVisit(visitKeyOf(this.row.id, name, visit), 'approval');
    if (this.snap.status !== 'waiting_for_human_input') {
      const prompt = renderTemplate(state.prompt, this.scope());
      this.snap.status = 'waiting_for_human_input';
      await this.commit(
        [
          {
            type: 'WorkflowWaitingForHumanInput',
            key: `waiting:${name}:${visit}`,
            state_name: name,
            iteration_number: visit,
            payload: { approval_id: approvalId, prompt, timeout_seconds: state.timeout_seconds ?? null },
          },
        ],
        false,
        (tx: Queryable) =>
          insertApproval(tx, {
            id: approvalId,
            tenantId: this.row.tenant_id,
            workflowExecutionId: this.row.id,
            stateName: name,
            visit,
            prompt,
            timeoutSeconds: state.timeout_seconds,
            defaultResponse: state.default_response,
          }),
      );
    }
    // Brought back from parking by its answer: the claim read it already (one round trip less on the wake path).
    // A pending one is read again below, after the wake-up is armed, so that no wake-up is missed.
    const answered = this.answer?.id === approvalId && this.answer.status !== 'pending' ? this.answer : undefined;
    this.answer = undefined;
    if (answered) return this.humanResult(state, name, answered);
    if (state.timeout_seconds !== undefined) this.deps.onApprovalCreated(approvalId);
    const parker = this.deps.parker;
    const pollMs = this.deps.pollMs ?? DEFAULT_POLL_MS;
    let parkAt = parker ? Date.now() + parker.parkAfterMs : Infinity;
    for (;;) {
      if (this.signal.aborted) throw this.signal.reason;
      // Armed before the read: a wake-up that arrives while the row is being read is not lost.
      const stop = new AbortController();
      const onAbort = (): void => stop.abort();
      this.signal.addEventListener('abort', onAbort, { once: true });
      let wokeUp = false;
      const woken = this.deps.wakers.wait(this.row.id, Math.max(0, Math.min(pollMs, parkAt - Date.now())), stop.signal, () => (wokeUp = true));
      try {
        const a = await getApproval(this.deps.db, approvalId);
        if (!a) throw new Error(`approval ${approvalId} of state "${name}" is missing`);
        if (a.status !== 'pending') return this.humanResult(state, name, a);
        if (parker && Date.now() >= parkAt) {
          // Idle long enough: leave memory; a message (or the parked-run scan) brings the run back from its row.
          if (await parker.park(this.fence, () => !wokeUp && !this.signal.aborted)) throw new Passivated();
          parkAt = Date.now() + Math.max(1000, parker.parkAfterMs);
          if (!wokeUp) continue;
        }
        await woken;
      } finally {
        stop.abort();
        this.signal.removeEventListener('abort', onAbort);
      }
    }
  }

  private humanResult(state: HumanState, name: string, a: ApprovalAnswer): { result: StateResult; human?: { feedback: string | null; approval: ApprovalAnswer } } {
    let response: string;
    let feedback: string | null;
    switch (a.status) {
      case 'approved':
        response = 'approved';
        feedback = a.feedback;
        break;
      case 'rejected':
        response = 'rejected';
        feedback = a.feedback;
        break;
      case 'responded':
        response = a.response ?? '';
        feedback = a.response;
        break;
      default: // expired
        if (a.response === null) {
          return {
            result: failedResult('Human', `state "${name}" timed out after ${state.timeout_seconds ?? 0} s waiting for human input (no default_response)`),
            human: { feedback: null, approval: a },
          };
        }
        response = a.response;
        feedback = a.response;
    }
    return {
      result: { output: { status: 'success', response, ...(feedback !== null ? { feedback } : {}) }, outcome: { kind: 'Human', status: 'success', response } },
      human: { feedback: feedback ?? response, approval: a },
    };
  }

  private async advance(
    name: string,
    visit: number,
    state: WorkflowState,
    result: StateResult,
    human: { feedback: string | null; approval: ApprovalAnswer } | undefined,
  ): Promise<void> {
    const s = this.snap;
    // Keys a state writes explicitly (update_blackboard, result_key) win over its own output record of the same name.
    s.blackboard = { ...s.blackboard, [name]: result.output, ...(result.blackboardPatch ?? {}) };
    if (result.contextPatch) s.context = { ...s.context, ...result.contextPatch };
    if (human?.feedback != null) s.human_feedback = human.feedback;
    s.status = 'running';
    const now = isoNow();
    const events: NewWorkflowEvent[] = [];
    if (human) {
      events.push({
        type: 'WorkflowHumanInputReceived',
        key: `human:${name}:${visit}`,
        state_name: name,
        iteration_number: visit,
        payload: { approval_id: human.approval.id, status: human.approval.status, response: result.outcome.response ?? null, received_at: now },
      });
    }
    events.push({
      type: 'WorkflowStateCompleted',
      key: `completed:${name}:${visit}`,
      state_name: name,
      iteration_number: visit,
      payload: { status: result.outcome.status, completed_at: now, ...(result.error ? { error: result.error } : {}) },
    });
    if (state.transitions.length === 0) {
      await this.complete(events);
      return;
    }
    let built: TemplateScope | undefined;
    const scope = (): TemplateScope => (built ??= this.scope());
    const spec = this.row.manifest.spec;
    let t;
    try {
      t = selectTransition(state.transitions, result.outcome, scope);
    } catch (err) {
      await this.finish('failed', events, `evaluating the transitions of state "${name}" failed: ${(err as Error).message}`);
      return;
    }
    if (!t) {
      const why = result.error ? `: ${result.error}` : '';
      await this.finish('failed', events, `no transition of state "${name}" matched (status ${result.outcome.status})${why}`);
      return;
    }
    const total = s.total_transitions + 1;
    if (total > spec.max_total_transitions) {
      await this.finish('failed', events, `max_total_transitions (${spec.max_total_transitions}) exceeded at the transition from "${name}" to "${t.target}"`);
      return;
    }
    const target = spec.states[t.target];
    if (!target) {
      await this.finish('failed', events, `transition target "${t.target}" of state "${name}" does not exist`);
      return;
    }
    const nextVisit = (s.visits[t.target] ?? 0) + 1;
    if (nextVisit > target.max_state_visits) {
      await this.finish('failed', events, `state "${t.target}" would be entered more than its max_state_visits (${target.max_state_visits}) times`);
      return;
    }
    s.feedback = t.feedback !== undefined ? renderTemplate(t.feedback, scope) : null;
    s.visits = { ...s.visits, [t.target]: nextVisit };
    s.total_transitions = total;
    s.current_state = t.target;
    // The transition is recorded on the completed event (one row less per step than a separate transition event).
    const completed = events[events.length - 1]!;
    completed.payload = { ...completed.payload, transition: { to: t.target, condition: t.condition, number: total } };
    events.push({
      type: 'WorkflowStateEntered',
      key: `entered:${t.target}:${nextVisit}`,
      state_name: t.target,
      iteration_number: nextVisit,
      payload: { entered_at: now, from: name },
    });
    if (pipelinable(target)) await this.commitPipelined(events);
    else await this.commit(events, true);
  }

  private async complete(events: NewWorkflowEvent[]): Promise<void> {
    const metadata = this.row.manifest.metadata;
    if (metadata.output_template && Object.keys(metadata.output_template).length > 0) {
      const out = renderFinalOutput(this.row.manifest, this.scope());
      if (!out.ok) {
        await this.finish('failed', events, out.error);
        return;
      }
      this.snap.final_output = out.value;
    }
    await this.finish('completed', events, null);
  }

  private async finish(status: 'completed' | 'failed' | 'cancelled', events: NewWorkflowEvent[], error: string | null): Promise<void> {
    this.snap.status = status;
    this.snap.error = error;
    const at = isoNow();
    const type = status === 'completed' ? 'WorkflowExecutionCompleted' : status === 'failed' ? 'WorkflowExecutionFailed' : 'WorkflowExecutionCancelled';
    events.push({
      type,
      key: 'terminal',
      state_name: this.snap.current_state ?? undefined,
      payload: { status, [`${status}_at`]: at, ...(error ? { reason: error } : {}), ...(status === 'completed' ? { final_output: this.snap.final_output ?? null } : {}) },
    });
    if (status === 'failed') this.log.info({ reason: error }, 'workflow failed');
    // A cancelled run's pending approval is gone too (lookups answer not-found-or-completed).
    const after = status === 'completed'
      ? undefined
      : (tx: Queryable) =>
          tx
            .query(
              `UPDATE approvals SET status = 'expired', resolved_by = 'workflow_${status}', resolved_at = now()
               WHERE workflow_execution_id = $1 AND status = 'pending'`,
              [this.row.id],
            )
            .then(() => undefined);
    await this.commit(events, false, after);
    workflowFinished(this.row, status);
    if (this.deps.terminals) this.deps.terminals.set(this.row.id, { status, final_output: this.snap.final_output ?? null, blackboard: this.snap.blackboard });
    else this.deps.wakers.wake(`terminal:${this.row.id}`);
    // A parent held by another node learns the end at once (one held here was woken by the line above).
    const parent = this.row.parent_execution_id;
    // never-rejects: Teller.tell answers an outcome; the parent reads the committed end however it is woken.
    if (parent && this.deps.teller) void this.deps.teller.tell('workflow', parent, { type: 'wake', topic: `terminal:${this.row.id}` });
  }

  private async commit(events: NewWorkflowEvent[], transition: boolean, after?: (tx: Queryable) => Promise<void>): Promise<void> {
    // A step with more statements (an approval row, expiring approvals) goes out after the run's earlier steps.
    await this.settle(after ? 0 : 1);
    await this.write(events, transition, after);
    await this.settle();
  }

  /**
   * Writes a transition into a built-in state without waiting for its commit, when the writer has nothing else to do
   * (a lone run: each step's round trip and the node's work for the next step then overlap with the database's
   * commit of this one). At most two of the run's steps are in flight; a busy writer batches instead (commit). A step
   * whose predecessor has not left the writer's queue yet joins it (StepWriter.writeStep, maxJoin).
   */
  private async commitPipelined(events: NewWorkflowEvent[]): Promise<void> {
    // The run's previous step still waits in the writer's queue (a lone run: the writer flushes at the end of this turn
    // of the event loop): this one joins it, and the run goes on; the two commit together, in one statement.
    const last = this.outstanding[this.outstanding.length - 1];
    if (!last || !this.deps.writer.joins(last)) {
      await this.settle(1);
      if (!this.deps.writer.idleExcept(this.outstanding.length)) return this.commit(events, true);
    }
    const written = this.write(events, true);
    // Observed by settle (or by the next step's wait); a failure then fails the run, which resumes from its row.
    written.catch(() => undefined);
  }

  /** Hands the step to the writer (after the run's outstanding one, whose events it carries) and counts it. */
  private write(events: NewWorkflowEvent[], transition: boolean, after?: (tx: Queryable) => Promise<void>): Promise<unknown> {
    const previous = this.outstanding[this.outstanding.length - 1];
    const changed = blackboardPatch(this.writtenBlackboard, this.snap.blackboard);
    this.writtenBlackboard = this.snap.blackboard;
    this.blackboardBytes += changed ? JSON.stringify(changed).length : 0;
    const patch = changed && this.blackboardBytes >= PATCH_MIN_BYTES ? changed : undefined;
    const step = this.deps.writer.writeStep({
      fence: this.fence,
      snapshot: { ...this.snap },
      firstSeq: this.lastSeq + 1,
      ...(patch ? { blackboardPatch: patch } : {}),
      events,
      transition,
      ...(after ? { after } : {}),
      ...(previous ? { previous } : {}),
    });
    // A step joined to the previous one settles with it: one entry of the run's outstanding steps stands for both.
    if (step.joined) this.outstanding[this.outstanding.length - 1] = step;
    else this.outstanding.push(step);
    this.lastSeq += events.length;
    return step.settled;
  }

  /**
   * Waits until at most `left` of this run's steps are still in flight (none by default: every step it wrote is
   * committed); throws the first failure. One left is how many a new step may follow: a step carries the events of
   * the one before it only.
   */
  private async settle(left = 0): Promise<void> {
    while (this.outstanding.length > left) await this.outstanding.shift()!.settled;
  }
}
