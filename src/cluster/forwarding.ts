// The controller's side of running executions on workers (docs/ROUTING.md). On a `controller` node the
// ExecutionService writes the row as everywhere (pending, claimed for this node) and spawns the `execution` actor;
// here that kind is the ForwardingActor: it routes the execution (RouteExecution's rotation), hands the row to the
// chosen worker (owner_node = worker, a new epoch), calls ForwardExecution on it and, for every event the worker
// streams back, publishes what the worker has persisted (the shared database) on this controller's bus, so clients
// on any controller see it live. A worker lost mid-execution — the stream breaks and the worker cannot be reached
// again, or its heartbeats stop (the sweep below) — does not end the execution while another ACTIVE worker can take
// it: the controller takes the row back and hands it to that survivor, which resumes it from its journal
// (resume.ts). With no survivor (or past MAX_RESUMES) it ends `failed` with reason `worker_lost`; one that had not
// started yet is routed again to another worker. Every change of hands bumps the row's epoch, so a worker that was
// only cut off is fenced: its later writes change nothing.
import { status as GrpcStatus, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import type { ActorHandle, ActorKind, ActorMessage, Behaviour } from '../actors/kind.ts';
import type { ActorRuntime } from '../actors/runtime.ts';
import type { LapsedSource } from '../actors/leased-row/sweeper.ts';
import type { EventBus } from '../bus/bus.ts';
import { EXECUTION_KIND } from '../agents/execution/actor.ts';
import { appendExecutionEvent, readExecutionEvents } from '../agents/execution/events.ts';
import { getExecution, isTerminal, type ExecutionRow } from '../agents/execution/repo.ts';
import { ForwardExecutionRequest, type NodeCapabilityAdvertisement } from '../gen/orch/cluster/v1/cluster.js';
import type { ExecutionEvent } from '../gen/orch/runtime/v1/runtime.js';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import { NodeClusterClient, type CallCredentials } from './client.ts';
import { ExecutionRouter, requirementsOf, type RouteDecision } from './routing.ts';
import { Errors, OrchError, isOrchError } from '../errors/catalog.ts';
import { handOverForResume, journalSummary, lastLostWorker, MAX_RESUMES, takeBackForResume, volumesStoredOn, type ResumePolicy } from './resume.ts';
import { isOutage } from '../errors/outage.ts';
import { backoffDelay } from '../util/backoff.ts';

export const WORKER_LOST = 'worker_lost';

export interface ForwardingSettings {
  db: Db;
  bus: EventBus;
  actors: ActorRuntime;
  /** This controller's node id. */
  nodeId: string;
  router: ExecutionRouter;
  /** The controller's own node token and key, for calls to workers. */
  credentials: () => Promise<CallCredentials>;
  /** The claim a worker gets on the row when it is handed over (its actor renews it). */
  leaseMs: number;
  /** How long a broken stream may take to come back before the worker counts as lost. */
  reconnectMs?: number;
  /** Resume a running execution of a lost worker on a survivor (startForwarding: the router's rule). */
  resume?: ResumePolicy;
  /**
   * How long an execution stays pending here while no ACTIVE worker meets its request (a worker restarting, the
   * only one down) before it fails; `spec.cluster.worker_wait_seconds`, default DEFAULT_WORKER_WAIT_MS. 0: at once.
   */
  workerWaitMs?: number;
  /** How often a waiting execution looks for a worker again (default 500 ms). */
  workerPollMs?: number;
  /** The execution left this controller's hands (ended, or lost to another node): the node wakes the run waiting on it. */
  onEnded?: (executionId: string) => void;
  logger: Logger;
}

export const DEFAULT_WORKER_WAIT_MS = 60_000;

type ForwardMessage = ActorMessage & ({ type: 'peer_lost'; nodeId: string } | { type: 'cancel'; reply?: (accepted: boolean) => void });

/** One gRPC client per worker address, kept while the controller runs. */
export class WorkerClients {
  private readonly clients = new Map<string, NodeClusterClient>();

  get(address: string): NodeClusterClient {
    let c = this.clients.get(address);
    if (!c) {
      c = new NodeClusterClient(address);
      this.clients.set(address, c);
    }
    return c;
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}

export type LostOutcome = 'failed' | 'rerouted' | 'resumed' | 'unchanged';

/**
 * The resume rule of a controller: a survivor is an ACTIVE worker, other than the lost one, meeting the request. With
 * `waitForOne` (spec.cluster.worker_wait_seconds > 0) an execution is taken back even when none is there now: its
 * ForwardingActor then waits for one (the lost worker too, once it heartbeats again) up to the bound, and only then
 * fails it `worker_lost` — both workers down at once no longer fails every running Agent state at once.
 */
export function routerResumePolicy(router: ExecutionRouter, maxResumes = MAX_RESUMES, waitForOne = false): ResumePolicy {
  return {
    maxResumes,
    survivorFor: async (row, lost) => waitForOne || (await router.candidates(requirementsOf(row.manifest), [lost])).length > 0,
  };
}

/**
 * The worker `lost` that held execution `id` is gone. A pending execution (never started) is taken back by
 * `controller` (to be routed again). A running one is taken back too, still `running`, to be resumed on a survivor
 * (`resumed`) when `resume` finds one and the execution has not used up its resumes and has no cancel pending;
 * otherwise it ends `failed` with reason `worker_lost`. Guarded by the owner, so of several controllers noticing at
 * once exactly one acts; the others answer `unchanged`.
 */
export async function handleWorkerLost(
  s: { db: Db; bus: EventBus; logger: Logger },
  id: string,
  lost: string,
  controller: string,
  leaseMs: number,
  resume?: ResumePolicy,
): Promise<LostOutcome> {
  const back = await s.db.query(
    `UPDATE executions SET owner_node = $3, epoch = epoch + 1, lease_expires_at = now() + ($4::INT * INTERVAL '1 millisecond'), updated_at = now()
     WHERE id = $1 AND owner_node = $2 AND status = 'pending'`,
    [id, lost, controller, Math.round(leaseMs)],
  );
  if (back.rowCount > 0) {
    s.logger.warn({ execution: id, worker: lost }, 'worker lost before the execution started; routing it again');
    return 'rerouted';
  }
  if (resume) {
    const row = await getExecution(s.db, id);
    if (row && row.status === 'running' && row.owner_node === lost && !row.cancel_requested) {
      const { resumes } = await journalSummary(s.db, id);
      const stranded = await volumesStoredOn(s.db, id, lost);
      if (resumes < resume.maxResumes && stranded === 0 && (await resume.survivorFor(row, lost))) {
        const event = await s.db.tx((tx) => takeBackForResume(tx, id, lost, controller, leaseMs));
        if (event) {
          await s.bus.publish(event).catch(() => undefined);
          s.logger.warn({ execution: id, worker: lost, iteration: row.iteration }, 'worker lost mid-execution; resuming it on a survivor');
          return 'resumed';
        }
      } else {
        s.logger.warn({ execution: id, worker: lost, resumes, stranded_volumes: stranded }, 'worker lost mid-execution and no resume is possible');
      }
    }
  }
  const event = await s.db.tx(async (tx) => {
    const res = await tx.query<{ iteration: number }>(
      `UPDATE executions SET status = 'failed', reason = $3, owner_node = NULL, lease_expires_at = NULL, epoch = epoch + 1,
         completed_at = now(), updated_at = now()
       WHERE id = $1 AND owner_node = $2 AND status IN ('pending', 'running')
       RETURNING iteration`,
      [id, lost, WORKER_LOST],
    );
    const row = res.rows[0];
    if (!row) return undefined;
    return appendExecutionEvent(tx, id, 'execution_failed', 'terminal', {
      execution_id: id,
      reason: WORKER_LOST,
      total_iterations: row.iteration,
      failed_at: new Date().toISOString(),
    });
  });
  if (event === undefined) return 'unchanged';
  if (event) await s.bus.publish(event).catch(() => undefined);
  s.logger.warn({ execution: id, worker: lost }, 'worker lost mid-execution; execution failed (worker_lost)');
  return 'failed';
}

class ForwardingBehaviour implements Behaviour<ForwardMessage> {
  private stream: ClientReadableStream<ExecutionEvent> | undefined;
  private worker: { nodeId: string; grpcAddress: string } | undefined;
  private lastSeq = 0;
  private stopped = false;
  /** The worker whose loss is being handled (a second report of it is ignored). */
  private losing: string | undefined;
  private readonly tried: string[] = [];
  /** When each tried worker was tried (or lost): one that heartbeats again later is back (restarted, thawed). */
  private readonly triedAt = new Map<string, number>();
  /** The end of this execution's wait for a worker, set when it first waits (one bound, however often it is routed). */
  private waitUntil: number | undefined;
  private readonly log: Logger;

  constructor(
    private readonly s: ForwardingSettings,
    private readonly clients: WorkerClients,
    private readonly actor: ActorHandle<ForwardMessage>,
  ) {
    this.log = s.logger.child({ actor: 'execution-forward', execution: actor.key });
  }

  async recover(): Promise<void> {
    const row = await getExecution(this.s.db, this.actor.key);
    if (!row || isTerminal(row.status)) return this.finish();
    if (row.owner_node === this.s.nodeId) {
      if (row.cancel_requested) return this.finishCancelled(row);
      await this.assign(row);
      return;
    }
    // Already on a worker (a controller restarted while it ran): follow it there.
    const peer = row.owner_node ? await this.addressOf(row.owner_node) : undefined;
    if (!peer) return this.finish();
    this.worker = peer;
    this.open();
  }

  private async addressOf(nodeId: string): Promise<{ nodeId: string; grpcAddress: string } | undefined> {
    const res = await this.s.db.query<{ grpc_address: string | null }>('SELECT grpc_address FROM cluster_nodes WHERE node_id = $1', [nodeId]);
    const address = res.rows[0]?.grpc_address;
    return address ? { nodeId, grpcAddress: address } : undefined;
  }

  /**
   * Routes the row this controller holds to a worker and hands it over; no worker: the execution fails. A `running`
   * row is one taken back from a lost worker: it is handed to a survivor to be resumed, or ends `worker_lost`.
   */
  private async assign(row: ExecutionRow): Promise<void> {
    const required: Partial<NodeCapabilityAdvertisement> = requirementsOf(row.manifest);
    const resuming = row.status === 'running';
    if (resuming) {
      const lost = await lastLostWorker(this.s.db, row.id);
      if (lost && !this.tried.includes(lost)) this.try(lost);
    }
    let target: RouteDecision;
    try {
      const routed = await this.routeWaiting(row, required);
      if (routed === 'gone') return this.finish();
      if (routed === 'cancelled') return this.finishCancelled(row);
      target = routed;
    } catch (err) {
      await this.failHere(row, resuming ? WORKER_LOST : (err as Error).message);
      return;
    }
    if (resuming) {
      const event = await this.s.db.tx((tx) => handOverForResume(tx, row.id, this.s.nodeId, target.nodeId, this.s.leaseMs));
      if (event === undefined) return this.finish();
      this.try(target.nodeId);
      this.worker = target;
      this.log.warn({ worker: target.nodeId, iteration: row.iteration }, 'execution resumed on a survivor');
      await this.relay();
      this.open();
      return;
    }
    const res = await this.s.db.query(
      `UPDATE executions SET owner_node = $3, epoch = epoch + 1, lease_expires_at = now() + ($4::INT * INTERVAL '1 millisecond'), updated_at = now()
       WHERE id = $1 AND owner_node = $2 AND status = 'pending'`,
      [row.id, this.s.nodeId, target.nodeId, Math.round(this.s.leaseMs)],
    );
    if (res.rowCount === 0) return this.finish();
    this.try(target.nodeId);
    this.worker = target;
    this.log.info({ worker: target.nodeId }, 'execution routed');
    this.open();
  }

  private try(nodeId: string): void {
    if (!this.tried.includes(nodeId)) this.tried.push(nodeId);
    this.triedAt.set(nodeId, Date.now());
  }

  /**
   * Routes the execution; while no ACTIVE worker meets its request it waits (up to workerWaitMs, looking again every
   * workerPollMs) instead of failing at once: a worker may be restarting, or be the only one and briefly down. The
   * row stays pending and this controller's: each look renews its claim (so no other controller's lapsed-lease sweep
   * takes it) and sees a cancel. Throws UNAVAILABLE naming the wait when none came; 'gone' when the row stopped being
   * this controller's (taken over, ended), 'cancelled' when a cancel was asked meanwhile. Workers tried before are
   * left out unless they have heartbeated since (restarted, thawed); the bound is one per execution.
   */
  private async routeWaiting(row: ExecutionRow, required: Partial<NodeCapabilityAdvertisement>): Promise<RouteDecision | 'gone' | 'cancelled'> {
    const waitMs = this.s.workerWaitMs ?? DEFAULT_WORKER_WAIT_MS;
    let nextHold = 0;
    for (;;) {
      try {
        return await this.s.router.route(required, this.tried);
      } catch (err) {
        const noWorker = isOrchError(err) && err.spec === Errors.UNAVAILABLE;
        if (!noWorker || this.stopped) throw err;
        // A worker tried before (lost, frozen, restarted) that has heartbeated since is back: it may take it again.
        const back = (await this.s.router.candidates(required, [])).filter(
          (p) => this.tried.includes(p.node_id) && p.last_heartbeat_at !== null && p.last_heartbeat_at.getTime() > (this.triedAt.get(p.node_id) ?? 0) + 2000,
        );
        if (back.length > 0) {
          const decision = this.s.router.pick(back, required);
          this.tried.splice(this.tried.indexOf(decision.nodeId), 1);
          return decision;
        }
        if (this.waitUntil === undefined) {
          this.waitUntil = Date.now() + waitMs;
          if (waitMs > 0) this.log.info({ wait_ms: waitMs, reason: (err as Error).message }, 'no ACTIVE worker meets the request; waiting for one');
        }
        if (Date.now() >= this.waitUntil) {
          if (waitMs <= 0) throw err;
          throw new OrchError(Errors.UNAVAILABLE, `${(err as Error).message}; none came within ${Math.round(waitMs / 100) / 10} s (spec.cluster.worker_wait_seconds)`);
        }
      }
      // Renewed (and a cancel looked for) every few looks, not at each: many executions may be waiting at once,
      // while a look itself reads the router's shared, briefly cached view of the membership.
      if (Date.now() >= nextHold) {
        nextHold = Date.now() + Math.min(2000, this.s.leaseMs / 4);
        const held = await this.s.db.query<{ cancel_requested: boolean }>(
          `UPDATE executions SET lease_expires_at = now() + ($3::INT * INTERVAL '1 millisecond')
           WHERE id = $1 AND owner_node = $2 AND status IN ('pending', 'running') RETURNING cancel_requested`,
          [row.id, this.s.nodeId, Math.round(this.s.leaseMs)],
        );
        const r = held.rows[0];
        if (!r) return 'gone';
        if (r.cancel_requested) return 'cancelled';
      }
      await new Promise((res) => setTimeout(res, Math.max(10, Math.min(this.s.workerPollMs ?? 500, (this.waitUntil ?? 0) - Date.now()))));
    }
  }

  /** Fails an execution this controller still holds (no worker can take it). */
  private async failHere(row: ExecutionRow, reason: string): Promise<void> {
    const event = await this.s.db.tx(async (tx) => {
      const res = await tx.query(
        `UPDATE executions SET status = 'failed', reason = $3, owner_node = NULL, lease_expires_at = NULL, completed_at = now(), updated_at = now()
         WHERE id = $1 AND owner_node = $2 AND status IN ('pending', 'running')`,
        [row.id, this.s.nodeId, reason],
      );
      if (res.rowCount === 0) return null;
      return appendExecutionEvent(tx, row.id, 'execution_failed', 'terminal', { execution_id: row.id, reason, total_iterations: row.iteration, failed_at: new Date().toISOString() });
    });
    if (event) await this.s.bus.publish(event).catch(() => undefined);
    this.log.warn({ reason }, 'execution could not be routed');
    this.finish();
  }

  private async finishCancelled(row: ExecutionRow): Promise<void> {
    const event = await this.s.db.tx(async (tx) => {
      const res = await tx.query(
        `UPDATE executions SET status = 'cancelled', reason = 'cancelled', owner_node = NULL, lease_expires_at = NULL, completed_at = now(), updated_at = now()
         WHERE id = $1 AND owner_node = $2 AND status IN ('pending', 'running')`,
        [row.id, this.s.nodeId],
      );
      if (res.rowCount === 0) return null;
      return appendExecutionEvent(tx, row.id, 'execution_failed', 'terminal', { execution_id: row.id, reason: 'cancelled', total_iterations: row.iteration, failed_at: new Date().toISOString() });
    });
    if (event) await this.s.bus.publish(event).catch(() => undefined);
    this.finish();
  }

  /** Calls ForwardExecution on the worker; events are relayed as they come, a break is judged by `broken`. */
  private open(attempt = 0, expected?: { nodeId: string }): void {
    const worker = this.worker;
    if (!worker || this.stopped) return;
    // A reconnect scheduled for a worker the execution has since left (resumed elsewhere) is dropped.
    if (expected && expected !== worker) return;
    void (async () => {
      const row = await getExecution(this.s.db, this.actor.key);
      if (!row || isTerminal(row.status)) return this.finish();
      const req = ForwardExecutionRequest.encode({
        execution_id: row.id,
        agent_id: row.agent_id,
        manifest_yaml: JSON.stringify(row.manifest),
        input: row.input,
        context_json: row.context_json ?? '',
      }).finish();
      const creds = await this.s.credentials();
      const stream = this.clients.get(worker.grpcAddress).stream<ExecutionEvent>('forwardExecution', req, creds);
      this.stream = stream;
      let ended = false;
      // Only the current stream speaks: one this actor dropped (its worker was lost) ends with CANCELLED, not news.
      // never-rejects: relay() catches its reads and publishes.
      stream.on('data', () => void this.relay());
      stream.on('error', (err: ServiceError) => {
        if (ended || this.stream !== stream) return;
        ended = true;
        this.judgeBroken(worker, err, attempt);
      });
      stream.on('end', () => {
        if (ended || this.stream !== stream) return;
        ended = true;
        void this.relay()
          .then(() => this.afterEnd(worker))
          .catch((e: unknown) => this.judgeBroken(worker, e as ServiceError, attempt));
      });
    })().catch((err: unknown) => this.judgeBroken(worker, err as ServiceError, attempt));
  }

  /**
   * `broken` reads the execution's row: while the database is down that fails, and is tried again after a backoff
   * (issue 20) instead of becoming an unhandled rejection; the stream's fate is judged once the database answers.
   */
  private judgeBroken(worker: { nodeId: string; grpcAddress: string }, err: ServiceError, attempt: number, failures = 0): void {
    this.broken(worker, err, attempt).catch((e: unknown) => {
      if (this.stopped) return;
      if (!isOutage(e)) {
        this.log.error({ err: e, worker: worker.nodeId }, 'judging a broken forward stream failed');
        return;
      }
      const delay = backoffDelay(failures + 1);
      this.log.warn({ err: e, worker: worker.nodeId, delayMs: delay }, 'database unavailable while judging a broken forward stream; retrying');
      setTimeout(() => this.judgeBroken(worker, err, attempt, failures + 1), delay).unref();
    });
  }

  /** Publishes what the worker has persisted since the last relay, in order. */
  private async relay(): Promise<void> {
    const events = await readExecutionEvents(this.s.db, this.actor.key, this.lastSeq + 1).catch(() => []);
    for (const e of events) {
      if (e.seq <= this.lastSeq) continue;
      this.lastSeq = e.seq;
      await this.s.bus.publish(e).catch(() => undefined);
    }
  }

  private async afterEnd(worker: { nodeId: string; grpcAddress: string }): Promise<void> {
    const row = await getExecution(this.s.db, this.actor.key);
    if (!row || isTerminal(row.status)) return this.finish();
    // The stream ended without a terminal event: the worker let go (it is stopping). Judge it like a break.
    await this.broken(worker, Object.assign(new Error('stream ended early'), { code: GrpcStatus.UNAVAILABLE }) as ServiceError, 0);
  }

  private async broken(worker: { nodeId: string; grpcAddress: string }, err: ServiceError, attempt: number): Promise<void> {
    if (this.stopped) return;
    await this.relay();
    const row = await getExecution(this.s.db, this.actor.key);
    if (!row || isTerminal(row.status) || row.owner_node !== worker.nodeId) return this.finish();
    // One reconnect: a worker that is alive answers again from its history; a killed one refuses at once.
    if (attempt === 0 && err.code !== GrpcStatus.PERMISSION_DENIED && err.code !== GrpcStatus.UNAUTHENTICATED) {
      this.log.info({ worker: worker.nodeId, code: err.code, err: err.message }, 'forward stream broke; reconnecting once');
      setTimeout(() => this.open(1, worker), Math.min(this.s.reconnectMs ?? 250, 2000)).unref();
      return;
    }
    await this.lost(worker.nodeId, `stream: ${err.message}`);
  }

  private async lost(workerId: string, why: string): Promise<void> {
    // The broken stream and the heartbeat sweep may both report the same loss; the first one acts.
    if (this.stopped || this.worker?.nodeId !== workerId || this.losing === workerId) return;
    this.losing = workerId;
    this.log.warn({ worker: workerId, why }, 'worker lost');
    const stream = this.stream;
    this.stream = undefined;
    stream?.cancel();
    const outcome = await handleWorkerLost(this.s, this.actor.key, workerId, this.s.nodeId, this.s.leaseMs, this.s.resume);
    await this.relay();
    if (outcome === 'rerouted' || outcome === 'resumed') {
      this.worker = undefined;
      const row = await getExecution(this.s.db, this.actor.key);
      if (row && !isTerminal(row.status)) return this.assign(row);
    }
    this.finish();
  }

  async handle(msg: ForwardMessage): Promise<void> {
    switch (msg.type) {
      case 'peer_lost':
        if (this.worker?.nodeId === msg.nodeId) await this.lost(msg.nodeId, 'missed heartbeats');
        return;
      case 'cancel':
        // cancel_requested is on the row: the worker's actor sees it at its next lease renewal.
        msg.reply?.(true);
        return;
    }
  }

  private finish(): void {
    if (this.stopped) return;
    this.stopped = true;
    // Usually the end the worker streamed back; a spurious wake (the row moved elsewhere) only makes the run re-read.
    this.s.onEnded?.(this.actor.key);
    this.stream?.cancel();
    this.stream = undefined;
    this.actor.stop();
  }

  async shutdown(): Promise<void> {
    this.stopped = true;
    this.stream?.cancel();
  }
}

export interface ForwardingCapability {
  kind: ActorKind<ActorMessage>;
  /** Starts the sweep that notices workers lost by their heartbeats; answers the function that stops it. */
  startSweeper(intervalMs: number): () => void;
  /** One pass of the sweep (tests, bench). */
  sweep(): Promise<void>;
  /** For the lapsed-lease sweep: executions a dead controller held (not yet on a worker), taken over here. */
  lapsed: LapsedSource;
  close(): void;
}

/**
 * Takes over the executions whose claim lapsed while a controller held them — pending ones it had not handed to a
 * worker yet, running ones it had taken back from a lost worker — or that nobody holds (a worker released it on its
 * way down): claimed for `nodeId` (a new epoch) so that its ForwardingActor routes them again. Rows held by workers
 * are the worker-loss sweep's (lostExecutions); rows whose actor runs here are left alone.
 */
export async function takeOverLapsedExecutions(db: Db, nodeId: string, leaseMs: number, live: readonly string[], limit = 100): Promise<string[]> {
  const res = await db.query<{ id: string }>(
    `UPDATE executions SET owner_node = $1, epoch = epoch + 1, lease_expires_at = now() + ($2::INT * INTERVAL '1 millisecond'), updated_at = now()
     WHERE id IN (
       SELECT e.id FROM executions e
       WHERE e.status IN ('pending', 'running') AND (e.lease_expires_at IS NULL OR e.lease_expires_at < now())
         AND (e.owner_node IS NULL OR e.owner_node = $1
           OR EXISTS (SELECT 1 FROM cluster_nodes n WHERE n.node_id = e.owner_node AND n.role = 'controller'))
         AND NOT (e.id::TEXT = ANY($3::TEXT[]))
       ORDER BY e.created_at LIMIT ${Math.max(1, Math.floor(limit))}
       FOR UPDATE SKIP LOCKED)
       AND (lease_expires_at IS NULL OR lease_expires_at < now())
     RETURNING id::TEXT AS id`,
    [nodeId, Math.round(leaseMs), live],
  );
  return res.rows.map((r) => r.id);
}

/** Ids of executions held by workers that are gone: UNHEALTHY, DEREGISTERED, or whose claim expired. */
async function lostExecutions(db: Db): Promise<{ id: string; owner_node: string }[]> {
  const res = await db.query<{ id: string; owner_node: string }>(
    `SELECT e.id::TEXT AS id, e.owner_node FROM executions e JOIN cluster_nodes n ON n.node_id = e.owner_node
     WHERE e.status IN ('pending', 'running') AND n.role = 'worker'
       AND (n.status IN ('UNHEALTHY', 'DEREGISTERED') OR e.lease_expires_at < now())`,
  );
  return res.rows;
}

export function startForwarding(settings: ForwardingSettings): ForwardingCapability {
  const waits = (settings.workerWaitMs ?? DEFAULT_WORKER_WAIT_MS) > 0;
  const s: ForwardingSettings = { ...settings, resume: settings.resume ?? routerResumePolicy(settings.router, MAX_RESUMES, waits) };
  const clients = new WorkerClients();
  const kind: ActorKind<ForwardMessage> = {
    name: EXECUTION_KIND,
    // Executions this controller took but had not handed to a worker when it stopped: pending ones, and running
    // ones it had taken back from a lost worker to resume elsewhere.
    recoverableKeys: async () =>
      (
        await s.db.query<{ id: string }>(
          `SELECT id::TEXT AS id FROM executions WHERE
             ((status = 'pending' AND (owner_node = $1 OR (owner_node IS NULL) OR lease_expires_at < now())
               AND (owner_node IS NULL OR owner_node NOT IN (SELECT node_id FROM cluster_nodes WHERE role IN ('worker', 'hybrid') AND status IN ('ACTIVE', 'DRAINING')))))
             OR (status = 'running' AND owner_node = $1)
           ORDER BY created_at`,
          [s.nodeId],
        )
      ).rows.map((r) => r.id),
    create: (handle) => new ForwardingBehaviour(s, clients, handle),
    giveUp: async (key, reason) => {
      await s.db.query(
        `UPDATE executions SET status = 'failed', reason = $2, completed_at = now(), updated_at = now() WHERE id = $1 AND owner_node = $3 AND status IN ('pending', 'running')`,
        [key, reason, s.nodeId],
      );
    },
  };
  s.actors.register<ForwardMessage>(kind);
  const sweep = async (): Promise<void> => {
    for (const r of await lostExecutions(s.db)) {
      if (s.actors.isLive(EXECUTION_KIND, r.id)) {
        s.actors.tell(EXECUTION_KIND, r.id, { type: 'peer_lost', nodeId: r.owner_node } as ActorMessage);
        continue;
      }
      const outcome = await handleWorkerLost(s, r.id, r.owner_node, s.nodeId, s.leaseMs, s.resume);
      if (outcome === 'rerouted' || outcome === 'resumed') s.actors.spawn(EXECUTION_KIND, r.id);
      if (outcome === 'failed') s.onEnded?.(r.id);
    }
  };
  return {
    kind: kind as unknown as ActorKind<ActorMessage>,
    sweep,
    lapsed: { kind: EXECUTION_KIND, lapsed: (live) => takeOverLapsedExecutions(s.db, s.nodeId, s.leaseMs, live) },
    startSweeper: (intervalMs) => {
      let running = false;
      const timer = setInterval(() => {
        if (running) return;
        running = true;
        sweep()
          .catch((err: unknown) => s.logger.warn({ err }, 'worker-loss sweep failed'))
          .finally(() => (running = false));
      }, intervalMs);
      timer.unref();
      return () => clearInterval(timer);
    },
    close: () => clients.close(),
  };
}
