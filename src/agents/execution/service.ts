// ExecutionService: the one implementation of execution operations behind HTTP, gRPC and (later) the orch.task.*
// tools. Validate first, then write the row (pending, claimed for this node) in one transaction, then start its
// actor; everything else reads the rows and the event stream.
import { randomUUID } from 'node:crypto';
import type { ActorRuntime } from '../../actors/runtime.ts';
import type { BusEvent, EventBus, Subscription } from '../../bus/bus.ts';
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Db } from '../../storage/db.ts';
import type { AgentManifest } from '../manifest/types.ts';
import { EXECUTION_KIND, type ExecutionMessage } from './actor.ts';
import { appendExecutionEvent, ExecutionHistory, executionStream, readExecutionEvents, TERMINAL_EVENTS } from './events.ts';
import { readTimeline, type Timeline } from './timeline.ts';
import { awaitExecutionEnd } from './await-end.ts';
import * as repo from './repo.ts';
import { uuidPrefixRange } from '../../storage/id-prefix.ts';
import type { Teller } from '../../actors/tell.ts';
import type { StartAdmission } from './admission.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(s: string): boolean {
  return UUID.test(s);
}

/** Where executions get their agent: the agent registry (issue 3 part 1), behind the smallest interface. */
export interface AgentSource {
  getManifest(tenant: string, agentId: string): Promise<{ agent_id: string; name: string; version: string; manifest: AgentManifest }>;
}

export interface StartRequest {
  tenant: string;
  agentId: string;
  input: string;
  contextJson?: string | undefined;
  workflowExecutionId?: string | undefined;
  /**
   * A caller-derived id (a workflow Agent state derives it from its visit): when an execution with this id exists
   * already, start answers it instead of starting another, so a visit re-run after a crash finds its execution.
   */
  executionId?: string | undefined;
  /**
   * Existing volumes of the tenant mounted into this execution besides the agent's own spec.volumes (a workflow
   * Agent state's `volumes`): written into the execution's manifest snapshot as spec.volumes entries with
   * `volume_id`, so a resumed execution mounts them again. One at the mount path of an agent volume replaces it.
   */
  volumes?: ExtraVolume[] | undefined;
}

export interface ExtraVolume {
  volumeId: string;
  /** A name for logs and mounts (the workflow volume's name). */
  name: string;
  mountPath: string;
  accessMode: 'read-write' | 'read-only';
}

/** The agent's manifest with `extra` volumes mounted: an agent volume at the same mount path gives way. */
export function withExtraVolumes(manifest: AgentManifest, extra: ExtraVolume[]): AgentManifest {
  const paths = new Set<string>();
  for (const v of extra) {
    if (!isUuid(v.volumeId)) throw new OrchError(Errors.BAD_REQUEST, `volume ${v.name}: volume_id must be a UUID`);
    if (typeof v.mountPath !== 'string' || !v.mountPath.startsWith('/')) throw new OrchError(Errors.BAD_REQUEST, `volume ${v.name}: mount_path must be absolute`);
    if (v.accessMode !== 'read-write' && v.accessMode !== 'read-only') throw new OrchError(Errors.BAD_REQUEST, `volume ${v.name}: access_mode must be read-write or read-only`);
    if (paths.has(v.mountPath)) throw new OrchError(Errors.BAD_REQUEST, `volume ${v.name}: duplicate mount path ${v.mountPath}`);
    paths.add(v.mountPath);
  }
  if (extra.length === 0) return manifest;
  const own = manifest.spec.volumes.filter((v) => !paths.has(v.mount_path));
  const added = extra.map((v) => ({ name: v.name, mount_path: v.mountPath, access_mode: v.accessMode, volume_id: v.volumeId.toLowerCase() }));
  return { ...manifest, spec: { ...manifest.spec, volumes: [...own, ...added] } };
}

export interface ExecutionView {
  execution_id: string;
  agent_id: string;
  agent_name: string;
  agent_version: string;
  tenant_id: string;
  status: repo.ExecutionStatus;
  input: string;
  iteration: number;
  final_output: string | null;
  reason: string | null;
  container_id: string | null;
  workflow_execution_id: string | null;
  usage: { prompt_tokens: number; completion_tokens: number };
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
}

function view(r: repo.ExecutionRow): ExecutionView {
  return {
    execution_id: r.id,
    agent_id: r.agent_id,
    agent_name: r.agent_name,
    agent_version: r.agent_version,
    tenant_id: r.tenant_id,
    status: r.status,
    input: r.input,
    iteration: r.iteration,
    final_output: r.final_output,
    reason: r.reason,
    // CONTRACT.md: the container id is shown while a container runs.
    container_id: repo.isTerminal(r.status) ? null : r.container_id,
    workflow_execution_id: r.workflow_execution_id,
    usage: { prompt_tokens: r.prompt_tokens, completion_tokens: r.completion_tokens },
    created_at: r.created_at.toISOString(),
    started_at: r.started_at?.toISOString() ?? null,
    completed_at: r.completed_at?.toISOString() ?? null,
  };
}

export interface LogEntry {
  sequence: number;
  event_type: 'ExecutionStarted' | 'ExecutionOutputReceived' | 'ExecutionCompleted';
  payload: Record<string, unknown>;
  recorded_at: string;
}

export class ExecutionService {
  private readonly history: ExecutionHistory;

  constructor(
    private readonly db: Db,
    private readonly bus: EventBus,
    private readonly actors: ActorRuntime,
    private readonly agents: AgentSource,
    private readonly nodeId: string,
    private readonly leaseMs: number,
    private readonly logger: Logger,
    /** Reaches the node that runs an execution (a worker) with its cancel; absent: this node's actor only. */
    private teller?: Teller,
    /** This node's start queue: a start takes a place in it (or is refused, 429/503) before its row is written. */
    private readonly admission?: StartAdmission,
  ) {
    this.history = new ExecutionHistory(db);
  }

  /** Set by the node once its post exists (the post is wired after the capabilities). */
  setTeller(teller: Teller): void {
    this.teller = teller;
  }

  async start(req: StartRequest): Promise<{ execution_id: string }> {
    if (!isUuid(req.agentId)) throw new OrchError(Errors.BAD_REQUEST, 'Invalid agent ID');
    if (typeof req.input !== 'string') throw new OrchError(Errors.BAD_REQUEST, 'input must be a string');
    if (req.contextJson) {
      try {
        JSON.parse(req.contextJson);
      } catch {
        throw new OrchError(Errors.BAD_REQUEST, 'context_json is not valid JSON');
      }
    }
    if (req.executionId !== undefined) {
      if (!isUuid(req.executionId)) throw new OrchError(Errors.BAD_REQUEST, 'Invalid execution ID');
      const existing = await repo.getExecution(this.db, req.executionId);
      if (existing) {
        if (existing.tenant_id !== req.tenant) throw new OrchError(Errors.CONFLICT, 'execution id already in use');
        return { execution_id: existing.id };
      }
    }
    const agent = await this.agents.getManifest(req.tenant, req.agentId);
    const manifest = req.volumes ? withExtraVolumes(agent.manifest, req.volumes) : agent.manifest;
    const id = req.executionId ?? randomUUID();
    // A place in the start queue first: a full queue refuses before anything is written.
    this.admission?.reserve(req.tenant, id);
    try {
      // One statement, so no explicit transaction (BEGIN and COMMIT around it were two more round trips per start).
      await repo.insertExecution(this.db, {
        id,
        tenantId: req.tenant,
        agentId: agent.agent_id,
        agentName: agent.name,
        agentVersion: agent.version,
        manifest,
        input: req.input,
        contextJson: req.contextJson,
        workflowExecutionId: req.workflowExecutionId,
        ownerNode: this.nodeId,
        leaseMs: this.leaseMs,
      });
    } catch (err) {
      this.admission?.release(id);
      throw err;
    }
    try {
      this.actors.spawn(EXECUTION_KIND, id);
    } catch (err) {
      this.admission?.release(id);
      throw new OrchError(Errors.INTERNAL, `execution ${id} failed to start: ${(err as Error).message}`, { cause: err });
    }
    this.logger.info({ execution: id, agent: agent.name }, 'execution created');
    return { execution_id: id };
  }

  /**
   * Run-and-wait: starts the execution and, if it ends within `waitMs`, answers its view (status, final_output,
   * reason); else the id as `start` does. `signal`: the caller went away.
   */
  async startAndWait(req: StartRequest, waitMs: number, signal?: AbortSignal): Promise<{ execution_id: string } | ExecutionView> {
    const started = await this.start(req);
    const end = await awaitExecutionEnd(this.db, this.bus, started.execution_id, waitMs, signal);
    return end ? view(end) : started;
  }

  async get(tenant: string, id: string): Promise<ExecutionView> {
    return view(await this.row(tenant, id));
  }

  private async row(tenant: string, id: string): Promise<repo.ExecutionRow> {
    if (!isUuid(id)) throw new OrchError(Errors.BAD_REQUEST, 'Invalid execution ID');
    const row = await repo.getTenantExecution(this.db, tenant, id);
    if (!row) throw new OrchError(Errors.NOT_FOUND, 'Execution not found');
    return row;
  }

  async list(tenant: string, f: { agentId?: string; status?: string; idPrefix?: string; limit?: number; offset?: number }): Promise<ExecutionView[]> {
    if (f.agentId !== undefined && !isUuid(f.agentId)) throw new OrchError(Errors.BAD_REQUEST, 'Invalid agent ID');
    if (f.status !== undefined && !['pending', 'running', 'completed', 'failed', 'cancelled'].includes(f.status)) {
      throw new OrchError(Errors.BAD_REQUEST, `unknown status ${f.status}`);
    }
    const limit = Math.min(Math.max(f.limit ?? 20, 1), 200);
    const offset = Math.max(f.offset ?? 0, 0);
    const idRange = f.idPrefix !== undefined ? uuidPrefixRange(f.idPrefix) : undefined;
    const rows = await repo.listExecutions(this.db, tenant, { agentId: f.agentId, status: f.status, idRange, limit, offset });
    return rows.map(view);
  }

  /** The execution as a timeline of iterations, model turns and tool calls (timeline.ts). */
  async timeline(tenant: string, id: string): Promise<Timeline> {
    await this.row(tenant, id);
    return readTimeline(this.db, id);
  }

  /** Cancels a running execution: its actor kills the sandbox at once and records `cancelled`. */
  async cancel(tenant: string, id: string): Promise<{ cancelled: boolean; status: string; error?: string }> {
    const row = await this.row(tenant, id);
    if (repo.isTerminal(row.status)) return { cancelled: false, status: row.status, error: `execution is already ${row.status}` };
    await this.db.query('UPDATE executions SET cancel_requested = true, updated_at = now() WHERE id = $1', [id]);
    // The node that holds the execution (a worker, when a controller forwarded it there) kills its sandbox at once,
    // instead of at its next lease renewal. In the background: an unreachable holder must not hold the answer up.
    if (this.teller) {
      this.teller
        .tell('execution', id, { type: 'cancel' })
        .catch((err: unknown) => this.logger.warn({ err, execution: id }, 'cancel not delivered; the execution sees it at its next renewal'));
    }
    if (this.actors.tell(EXECUTION_KIND, id, { type: 'cancel' } satisfies ExecutionMessage)) return { cancelled: true, status: 'cancelling' };
    // No live actor here: a pending row nobody runs is cancelled directly (guarded by its status).
    const event = await this.db.tx(async (tx) => {
      const res = await tx.query(
        `UPDATE executions SET status = 'cancelled', reason = 'cancelled', completed_at = now(), updated_at = now()
         WHERE id = $1 AND status IN ('pending', 'running') AND (owner_node IS NULL OR lease_expires_at < now() OR owner_node = $2)`,
        [id, this.nodeId],
      );
      if (res.rowCount === 0) return null;
      return appendExecutionEvent(tx, id, 'execution_failed', 'terminal', {
        execution_id: id,
        reason: 'cancelled',
        total_iterations: row.iteration,
        failed_at: new Date().toISOString(),
      });
    });
    if (event) await this.bus.publish(event);
    // A workflow run waiting on it (an Agent state) learns the end at once, wherever it is held.
    // never-rejects: Teller.tell answers an outcome.
    if (event && row.workflow_execution_id && this.teller) void this.teller.tell('workflow', row.workflow_execution_id, { type: 'wake', topic: `execution:${id}` });
    return { cancelled: true, status: event ? 'cancelled' : 'cancelling' };
  }

  async remove(tenant: string, id: string): Promise<void> {
    const row = await this.row(tenant, id);
    if (!repo.isTerminal(row.status)) throw new OrchError(Errors.CONFLICT, `execution is ${row.status}; only terminal executions can be removed`);
    await this.db.tx((tx) => repo.deleteExecution(tx, tenant, id));
  }

  /**
   * Every event of the execution from `fromSeq`, then live ones, each once and in order; `onEvent` sees the
   * terminal event last. Resolves with the subscription (close it when the client goes away).
   */
  async follow(tenant: string, id: string, onEvent: (e: BusEvent) => void, fromSeq = 1): Promise<Subscription> {
    await this.row(tenant, id);
    return this.bus.subscribe(executionStream(id), onEvent, { fromSeq, history: this.history });
  }

  /** The seq of the execution's latest recorded event (0: none yet): where a "so far" read of the stream ends. */
  async lastSeq(tenant: string, id: string): Promise<number> {
    await this.row(tenant, id);
    const res = await this.db.query<{ n: number }>('SELECT COALESCE(MAX(seq), 0)::INT4 AS n FROM execution_events WHERE execution_id = $1', [id]);
    return res.rows[0]?.n ?? 0;
  }

  static isTerminalEvent(e: BusEvent): boolean {
    return TERMINAL_EVENTS.has(e.type);
  }

  /** Execution log events of seed 000: ExecutionStarted, ExecutionOutputReceived, ExecutionCompleted. */
  async logs(tenant: string, id: string, limit = 50, offset = 0): Promise<{ execution_id: string; events: LogEntry[]; count: number; limit: number; offset: number }> {
    const row = await this.row(tenant, id);
    const lim = Math.min(Math.max(limit, 1), 200);
    const all: LogEntry[] = [];
    for (const e of await readExecutionEvents(this.db, id)) {
      const p = e.payload as Record<string, unknown>;
      if (e.type === 'execution_started') all.push({ sequence: 0, event_type: 'ExecutionStarted', payload: { agent_id: p.agent_id, started_at: p.started_at }, recorded_at: e.at });
      else if (e.type === 'iteration_output') all.push({ sequence: 0, event_type: 'ExecutionOutputReceived', payload: { chunk: p.output }, recorded_at: e.at });
      else if (TERMINAL_EVENTS.has(e.type)) all.push({ sequence: 0, event_type: 'ExecutionCompleted', payload: { execution_id: id, status: row.status }, recorded_at: e.at });
    }
    all.forEach((x, i) => (x.sequence = i + 1));
    const page = all.slice(offset, offset + lim);
    return { execution_id: id, events: page, count: page.length, limit: lim, offset };
  }
}
