// WorkflowExecutionService: the one implementation of workflow-run operations behind HTTP, the orch.workflow.* tools,
// the CLI and the Subworkflow runner (ChildWorkflows). Validate first (definition, input_schema), then write the row
// with its first events in one transaction, then start its actor; everything else reads rows and the event stream.
import type { ActorRuntime } from '../actors/runtime.ts';
import type { BusEvent, EventBus, Subscription } from '../bus/bus.ts';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import { randomUUID } from 'node:crypto';
import { WORKFLOW_KIND } from './engine/actor.ts';
import type { ChildStartRequest, ChildTerminal, ChildWorkflows } from './engine/child-types.ts';
import type { IdleVisit } from './engine/runner-types.ts';
import { Passivated } from '../actors/kind.ts';
import { readWorkflowEvents, TERMINAL_WORKFLOW_EVENTS, WorkflowHistory, workflowStream, type NewWorkflowEvent } from './engine/events.ts';
import { isUuid } from './engine/ids.ts';
import * as repo from './engine/repo.ts';
import { StartWriter, type StartOutcome, type StartStimulus, type StartWrite } from './engine/starts.ts';
import type { TerminalCache, Wakers } from './engine/wakers.ts';
import type { Teller } from '../actors/tell.ts';
import { pendingApprovalOf, resolveApproval } from './approvals/repo.ts';
import type { WorkflowDefinition } from './registry/types.ts';
import { validateWorkflowInput } from './input.ts';
import { awaitRunEnd } from './await-end.ts';
import type { RecentWorkflowEvents } from './engine/recent-events.ts';
import { uuidPrefixRange } from '../storage/id-prefix.ts';
import { workflowStarted } from '../observability/runs.ts';

/** Where runs get their workflow: the registry (WorkflowDefinitionService), behind the smallest interface. */
export interface WorkflowSource {
  resolve(tenantId: string, nameOrId: string, version?: string, userId?: string): Promise<WorkflowDefinition | undefined>;
  /**
   * As resolve, possibly from memory, with the fingerprint the start's INSERT checks (registry resolveForRun);
   * `fresh` skips the memory. Sources without it are asked with resolve on every start.
   */
  resolveForRun?(
    tenantId: string,
    nameOrId: string,
    version?: string,
    userId?: string,
    opts?: { fresh?: boolean },
  ): Promise<{ definition: WorkflowDefinition; fingerprint?: string | undefined } | undefined>;
}

/** Starts refused by their fingerprint guard (a registry change raced the start) are prepared again at most this
 * often from a fresh read; past that the start is written unguarded, as a read-then-write start always was. */
const STALE_RETRIES = 3;

export const MAX_SUBWORKFLOW_DEPTH = 10;

export interface RunRequest {
  tenant: string;
  workflow: string;
  input?: unknown;
  intent?: unknown;
  blackboard?: unknown;
  version?: string | undefined;
  userId?: string | undefined;
  /** A derived id (child runs); the run is created only if no run has it yet. */
  executionId?: string;
  parent?: { id: string; depth: number; ancestry: string[] };
}

export interface WorkflowExecutionView {
  execution_id: string;
  workflow_id: string;
  workflow_name: string;
  workflow_version: string;
  tenant_id: string;
  status: repo.WorkflowStatus;
  current_state: string | null;
  input: unknown;
  intent: string | null;
  blackboard: Record<string, unknown>;
  state_outputs: Record<string, unknown>;
  context: Record<string, unknown>;
  visits: Record<string, number>;
  total_transitions: number;
  final_output: unknown;
  error: string | null;
  parent_execution_id: string | null;
  depth: number;
  created_at: string;
  started_at: string;
  last_transition_at: string | null;
  completed_at: string | null;
}

export function viewOf(r: repo.WorkflowExecutionRow): WorkflowExecutionView {
  const states = r.manifest?.spec?.states ?? {};
  const state_outputs: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r.blackboard ?? {})) if (k in states) state_outputs[k] = v;
  return {
    execution_id: r.id,
    workflow_id: r.workflow_id,
    workflow_name: r.workflow_name,
    workflow_version: r.workflow_version,
    tenant_id: r.tenant_id,
    status: r.status,
    current_state: r.current_state,
    input: r.input,
    intent: r.intent,
    blackboard: r.blackboard,
    state_outputs,
    context: r.context,
    visits: r.visits,
    total_transitions: r.total_transitions,
    final_output: r.final_output ?? null,
    error: r.error,
    parent_execution_id: r.parent_execution_id,
    depth: r.depth,
    created_at: r.created_at.toISOString(),
    started_at: r.started_at.toISOString(),
    last_transition_at: r.last_transition_at?.toISOString() ?? null,
    completed_at: r.completed_at?.toISOString() ?? null,
  };
}

export interface WorkflowLogEntry {
  sequence: number;
  event_type: string;
  state_name: string | null;
  iteration_number: number | null;
  payload: Record<string, unknown>;
  recorded_at: string;
}

/** The default safety-net poll of waiting runs (spec.workflow.poll_seconds). */
export const DEFAULT_POLL_MS = 30_000;

/** What run-and-wait answers: the run's end, or (still running at the wait's end) its id as `run` answers. */
export type RunWaitOutcome =
  | { execution_id: string; status: 'started' }
  | { execution_id: string; status: 'completed' | 'failed' | 'cancelled'; final_output: unknown; error?: string | null };

export interface WorkflowServiceDeps {
  db: Db;
  bus: EventBus;
  actors: ActorRuntime;
  workflows: WorkflowSource;
  wakers: Wakers;
  /** Wakes a run wherever its lease is held (ActorPost), after the fact it waits for was committed. */
  teller: Teller;
  /** The safety-net poll of a waiting child (spec.workflow.poll_seconds); default 30 s. */
  pollMs?: number;
  nodeId: string;
  leaseMs: number;
  logger: Logger;
  /** Terminal snapshots of runs that finished in this process (in-process waiters read no row). */
  terminals?: TerminalCache;
  /** Shared with the WorkflowActor kind: rows just inserted here, so their actor need not claim them again. */
  fresh?: Map<string, repo.WorkflowExecutionRow>;
  /** The group-commit writer of starts (one is made when absent). */
  starts?: StartWriter;
  /** Events of runs started here, for new subscribers' history (recent-events.ts); absent: the database only. */
  recent?: RecentWorkflowEvents;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export class WorkflowExecutionService {
  private readonly history: WorkflowHistory;

  private readonly starts: StartWriter;

  constructor(private readonly d: WorkflowServiceDeps) {
    this.history = new WorkflowHistory(d.db, d.recent, (id) => d.actors.isLive(WORKFLOW_KIND, id));
    this.starts = d.starts ?? new StartWriter(d.db);
  }

  async run(req: RunRequest): Promise<{ execution_id: string; status: 'started' }> {
    const id = req.executionId ?? randomUUID();
    const { start, out } = await this.write({ ...req, executionId: id });
    if ('row' in out) this.started(start, out.row);
    return { execution_id: start.run.id, status: 'started' }; // else an existing child run: idempotent
  }

  /**
   * Run-and-wait: starts the run and, if it ends within `waitMs`, answers its end (the error too when it did not
   * complete); else the run id as `run` does. `signal`: the caller went away.
   */
  async runAndWait(req: RunRequest, waitMs: number, signal?: AbortSignal): Promise<RunWaitOutcome> {
    const started = await this.run(req);
    const id = started.execution_id;
    const end = await awaitRunEnd(this.d, id, waitMs, signal);
    if (!end) return started;
    if (end.status === 'completed') return { execution_id: id, status: end.status, final_output: end.final_output ?? null };
    const row = await repo.getWorkflowExecution(this.d.db, id); // the rare path: the reason is on the row
    return { execution_id: id, status: end.status, final_output: end.final_output ?? null, error: row?.error ?? null };
  }

  /** Prepares and writes the start; a start refused by its guard is prepared again from a fresh registry read. */
  private async write(req: RunRequest & { executionId: string }, stimulus?: StartStimulus): Promise<{ start: StartWrite; out: StartOutcome }> {
    for (let attempt = 0; ; attempt++) {
      const start = { ...(await this.prepare(req, attempt > 0, attempt <= STALE_RETRIES)), stimulus };
      const out = await this.starts.write(start);
      if (!('stale' in out)) return { start, out };
    }
  }

  /**
   * Starts a run for a stimulus: the delivery's key claim, the stimulus row (recorded `routed`) and the run are
   * written in one statement, committed before this answers. `duplicate`: the key is held by another delivery and
   * nothing was written. Validation errors (workflow not deployed, input_schema) throw before anything is written.
   */
  async runStimulus(req: RunRequest, stimulus: StartStimulus): Promise<{ execution_id: string } | { duplicate: true }> {
    const { start, out } = await this.write({ ...req, executionId: req.executionId ?? randomUUID() }, stimulus);
    if ('row' in out) {
      this.started(start, out.row);
      return { execution_id: start.run.id };
    }
    if ('duplicate' in out) return { duplicate: true };
    throw new Error(`workflow run ${start.run.id} exists already`);
  }

  /** Validates the request and builds the row and first events of the run (writes nothing). `fresh`: read the
   * registry, not memory; `guarded`: carry the resolution's fingerprint for the INSERT to check. */
  private async prepare(req: RunRequest, fresh = false, guarded = true): Promise<StartWrite> {
    if (typeof req.workflow !== 'string' || req.workflow === '') throw new OrchError(Errors.BAD_REQUEST, 'workflow name is required');
    if (req.intent !== undefined && req.intent !== null && typeof req.intent !== 'string') throw new OrchError(Errors.BAD_REQUEST, 'intent must be a string');
    if (req.blackboard !== undefined && req.blackboard !== null && !isPlainObject(req.blackboard)) {
      throw new OrchError(Errors.BAD_REQUEST, 'blackboard must be an object');
    }
    if (req.version !== undefined && typeof req.version !== 'string') throw new OrchError(Errors.BAD_REQUEST, 'version must be a string');
    let def: WorkflowDefinition | undefined;
    let fingerprint: string | undefined;
    if (this.d.workflows.resolveForRun) {
      const r = await this.d.workflows.resolveForRun(req.tenant, req.workflow, req.version, req.userId, { fresh });
      def = r?.definition;
      fingerprint = r?.fingerprint;
    } else def = await this.d.workflows.resolve(req.tenant, req.workflow, req.version, req.userId);
    if (!def) {
      throw new OrchError(Errors.NOT_FOUND, `workflow ${req.workflow}${req.version ? ` version ${req.version}` : ''} is not deployed`);
    }
    const manifest = def.manifest;
    const input = req.input ?? {};
    const checked = validateWorkflowInput(manifest, input);
    if (!checked.ok) {
      throw new OrchError(Errors.VALIDATION, `input does not match the input_schema of workflow ${def.name}`, { details: checked.errors });
    }
    const intent = typeof req.intent === 'string' ? req.intent : undefined;
    const context = { ...(manifest.spec.context ?? {}) };
    const blackboard: Record<string, unknown> = {
      ...context,
      ...((req.blackboard as Record<string, unknown> | undefined) ?? {}),
      ...(intent !== undefined ? { intent } : {}),
    };
    const id = req.executionId ?? randomUUID();
    const initial = manifest.spec.initial_state;
    const now = new Date().toISOString();
    const events: NewWorkflowEvent[] = [
      { type: 'WorkflowExecutionStarted', key: 'started', payload: { workflow_id: def.id, workflow_name: def.name, version: def.version, started_at: now } },
      { type: 'WorkflowStateEntered', key: `entered:${initial}:1`, state_name: initial, iteration_number: 1, payload: { entered_at: now } },
    ];
    return {
      run: {
        id,
        tenantId: req.tenant,
        workflowId: def.id,
        workflowName: def.name,
        workflowVersion: def.version,
        manifest,
        input,
        intent,
        blackboard,
        context,
        parentExecutionId: req.parent?.id,
        depth: req.parent?.depth ?? 0,
        ancestry: req.parent?.ancestry ?? [],
        ownerNode: this.d.nodeId,
        leaseMs: this.d.leaseMs,
      },
      events,
      guard: guarded && fingerprint !== undefined ? { viewer: req.userId ?? null, fingerprint } : undefined,
    };
  }

  /** After the commit: announce the first events and start the run's actor on the claim the insert took. */
  private started(start: StartWrite, row: repo.WorkflowExecutionRow): void {
    const id = start.run.id;
    const at = new Date().toISOString();
    workflowStarted(start.run.workflowName, start.run.tenantId);
    start.events.forEach((e, i) => {
      this.d.bus
        .publish({
          stream: workflowStream(id),
          seq: i + 1,
          type: e.type,
          payload: { ...e.payload, state_name: e.state_name ?? null, iteration_number: e.iteration_number ?? null },
          at,
        })
        .catch(() => undefined);
    });
    this.d.fresh?.set(id, row);
    this.d.actors.spawn(WORKFLOW_KIND, id);
    this.d.logger.info({ workflow_execution: id, workflow: start.run.workflowName, version: start.run.workflowVersion }, 'workflow run started');
  }

  private async row(tenant: string, id: string): Promise<repo.WorkflowExecutionRow> {
    if (!isUuid(id)) throw new OrchError(Errors.BAD_REQUEST, 'Invalid execution ID');
    const row = await repo.getTenantWorkflowExecution(this.d.db, tenant, id);
    if (!row) throw new OrchError(Errors.NOT_FOUND, 'Workflow execution not found');
    return row;
  }

  async get(tenant: string, id: string): Promise<WorkflowExecutionView> {
    return viewOf(await this.row(tenant, id));
  }

  async list(tenant: string, f: { workflow?: string; status?: string; idPrefix?: string; limit?: number; offset?: number }): Promise<WorkflowExecutionView[]> {
    if (f.status !== undefined && !['running', 'waiting_for_human_input', 'completed', 'failed', 'cancelled'].includes(f.status)) {
      throw new OrchError(Errors.BAD_REQUEST, `unknown status ${f.status}`);
    }
    const limit = Math.min(Math.max(f.limit ?? 20, 1), 200);
    const offset = Math.max(f.offset ?? 0, 0);
    const idRange = f.idPrefix !== undefined ? uuidPrefixRange(f.idPrefix) : undefined;
    const rows = await repo.listWorkflowExecutions(this.d.db, tenant, { workflow: f.workflow, status: f.status, idRange, limit, offset });
    return rows.map(viewOf);
  }

  /** Delivers human input to a run paused at a Human state. */
  async signal(tenant: string, id: string, response: unknown, by?: string): Promise<{ signalled: boolean; error?: string }> {
    if (typeof response !== 'string') throw new OrchError(Errors.BAD_REQUEST, 'response must be a string');
    const row = await this.row(tenant, id);
    if (row.status !== 'waiting_for_human_input') return { signalled: false, error: `execution is ${row.status}, not waiting_for_human_input` };
    const pending = await pendingApprovalOf(this.d.db, id);
    if (!pending) return { signalled: false, error: 'execution has no pending human input request' };
    const done = await resolveApproval(this.d.db, pending.id, { status: 'responded', response, feedback: response, resolvedBy: by }, { withHolder: true });
    if (!done) return { signalled: false, error: 'the human input request was already answered' };
    // never-rejects: Teller.tell answers an outcome; the committed answer is read by the run however it is woken.
    void this.d.teller.tell('workflow', id, { type: 'wake' }, done.holder);
    return { signalled: true };
  }

  async cancel(tenant: string, id: string): Promise<{ cancelled: boolean; status: string; error?: string }> {
    const row = await this.row(tenant, id);
    if (repo.isTerminalStatus(row.status)) return { cancelled: false, status: row.status, error: `execution is already ${row.status}` };
    await this.cancelRow(id);
    return { cancelled: true, status: 'cancelling' };
  }

  private async cancelRow(id: string): Promise<void> {
    await this.d.db.query('UPDATE workflow_executions SET cancel_requested = true, updated_at = now() WHERE id = $1', [id]);
    // The holder (this node or another) stops the run at once; the renewal of its claim would see the request too.
    // In the background: a holder being waited out must not hold the caller's answer up.
    this.d.teller
      .tell('workflow', id, { type: 'cancel' })
      .then((outcome) => {
        // Nobody holds the row: claim it like recovery would (if its claim expired or it is ours) so it records the cancel.
        if (outcome === 'unheld' || outcome === 'undelivered') this.d.actors.spawn(WORKFLOW_KIND, id);
      })
      .catch((err: unknown) => this.d.logger.warn({ err, workflow_execution: id }, 'cancel not delivered; the run sees it at its next renewal'));
  }

  async remove(tenant: string, id: string): Promise<void> {
    const row = await this.row(tenant, id);
    if (!repo.isTerminalStatus(row.status)) throw new OrchError(Errors.CONFLICT, `workflow execution is ${row.status}; only terminal executions can be removed`);
    await this.d.db.tx((tx) => repo.deleteWorkflowExecution(tx, tenant, id));
  }

  async logs(tenant: string, id: string, limit = 50, offset = 0): Promise<{ execution_id: string; status: string; events: WorkflowLogEntry[]; count: number; total: number; limit: number; offset: number }> {
    const row = await this.row(tenant, id);
    const lim = Math.min(Math.max(Math.trunc(limit) || 50, 1), 200);
    const off = Math.max(Math.trunc(offset) || 0, 0);
    const page = await readWorkflowEvents(this.d.db, id, off + 1, lim);
    const events = page.map((e) => {
      const { state_name, iteration_number, ...payload } = e.payload as Record<string, unknown>;
      return {
        sequence: e.seq,
        event_type: e.type,
        state_name: (state_name as string | null) ?? null,
        iteration_number: (iteration_number as number | null) ?? null,
        payload,
        recorded_at: e.at,
      };
    });
    return { execution_id: id, status: row.status, events, count: events.length, total: row.last_seq, limit: lim, offset: off };
  }

  /** Every event of the run from `fromSeq`, then live ones, each once and in order. Close the subscription. */
  async follow(tenant: string, id: string, onEvent: (e: BusEvent) => void, fromSeq = 1): Promise<Subscription> {
    await this.row(tenant, id);
    return this.d.bus.subscribe(workflowStream(id), onEvent, { fromSeq, history: this.history });
  }

  static isTerminalEvent(e: BusEvent): boolean {
    return TERMINAL_WORKFLOW_EVENTS.has(e.type);
  }

  /** Polls the row until it is terminal, `timeoutMs` elapses or `signal` aborts; answers the last row read. */
  async waitRow(id: string, o: { timeoutMs: number; pollMs: number; signal?: AbortSignal }): Promise<repo.WorkflowExecutionRow | undefined> {
    const deadline = Date.now() + o.timeoutMs;
    for (;;) {
      const row = await repo.getWorkflowExecution(this.d.db, id);
      if (!row || repo.isTerminalStatus(row.status)) return row;
      const left = deadline - Date.now();
      if (left <= 0 || o.signal?.aborted) return row;
      await this.d.wakers.wait(`terminal:${id}`, Math.min(o.pollMs, left), o.signal);
    }
  }

  // ChildWorkflows (the Subworkflow runner's side of the engine).

  async start(req: ChildStartRequest): Promise<void> {
    if (req.depth > MAX_SUBWORKFLOW_DEPTH) {
      throw new OrchError(Errors.BAD_REQUEST, `SubworkflowDepthExceeded: nesting depth ${req.depth} exceeds ${MAX_SUBWORKFLOW_DEPTH}`);
    }
    const existing = await repo.getWorkflowExecution(this.d.db, req.childExecutionId);
    if (existing) return;
    const parent = await repo.getWorkflowExecution(this.d.db, req.parentExecutionId);
    await this.run({
      tenant: req.tenantId,
      workflow: req.workflow,
      input: req.input,
      executionId: req.childExecutionId,
      ...(parent?.intent ? { intent: parent.intent } : {}),
      parent: { id: req.parentExecutionId, depth: req.depth, ancestry: req.ancestry },
    });
  }

  async waitTerminal(childExecutionId: string, signal: AbortSignal, idle?: IdleVisit): Promise<ChildTerminal> {
    // A run of this process leaves its end in the terminal cache (no row read); others are read every 500 ms.
    // A run live in this process will leave its end in the cache: no need to read its row first.
    let readRow = !(this.d.terminals && this.d.actors.isLive(WORKFLOW_KIND, childExecutionId));
    let parkAt = idle ? Date.now() + idle.afterMs : Infinity;
    for (;;) {
      const cached = this.d.terminals?.take(childExecutionId);
      if (cached) return cached;
      // Woken by the child's end (TellActor from the node that ran it, or this node's terminal cache); the read after
      // the poll period is the safety net for a wake-up that never came. Armed before the read, so an end committed
      // meanwhile is not missed, and it marks `wokeUp` at once (parking asks it).
      let wokeUp = false;
      const woken = this.d.wakers.wait(`terminal:${childExecutionId}`, Math.max(0, Math.min(this.d.pollMs ?? DEFAULT_POLL_MS, parkAt - Date.now())), signal, () => (wokeUp = true));
      if (idle && Date.now() >= parkAt) {
        // Waited long enough: the row read below (always, before parking) decides; the run leaves memory if the child
        // is still running and no wake-up came meanwhile. Its end (a message) or the scan brings the run back.
        readRow = true;
      }
      if (readRow) {
        const row = await repo.getRunEnd(this.d.db, childExecutionId);
        if (!row) throw new Error(`child workflow run ${childExecutionId} does not exist`);
        if (repo.isTerminalStatus(row.status)) {
          this.d.terminals?.take(childExecutionId);
          return { status: row.status as ChildTerminal['status'], final_output: row.final_output ?? null, blackboard: row.blackboard };
        }
      }
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('aborted');
      if (idle && Date.now() >= parkAt) {
        if (await idle.park(() => !wokeUp && !signal.aborted && this.d.terminals?.peek(childExecutionId) === undefined)) throw new Passivated();
        parkAt = Date.now() + Math.max(1000, idle.afterMs);
      }
      await woken;
      readRow = this.d.terminals?.peek(childExecutionId) === undefined;
    }
  }

  async cancel_(childExecutionId: string): Promise<void> {
    const row = await repo.getWorkflowExecution(this.d.db, childExecutionId);
    if (!row || repo.isTerminalStatus(row.status)) return;
    await this.cancelRow(childExecutionId);
  }

  /** The ChildWorkflows view of this service (its `cancel` takes only the child id). */
  children(): ChildWorkflows {
    return {
      start: (r) => this.start(r),
      waitTerminal: (id, s, idle) => this.waitTerminal(id, s, idle),
      cancel: (id) => this.cancel_(id),
    };
  }
}
