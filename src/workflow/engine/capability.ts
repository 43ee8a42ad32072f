// Wires the workflow engine into a node: the group-commit StepWriter, the WorkflowActor and ApprovalActor kinds, the
// WorkflowExecutionService (HTTP, tools, CLI, child runs) and the ApprovalService. The node decides when; this
// decides how. Runners of the state kinds are given by the node (they need the agents capability, the container
// runtime, ...); System is always there, Subworkflow is bound here because it needs the service itself.
import type { ActorKind, ActorMessage } from '../../actors/kind.ts';
import type { ActorRuntime } from '../../actors/runtime.ts';
import type { EventBus } from '../../bus/bus.ts';
import { RecentWorkflowEvents } from './recent-events.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Db } from '../../storage/db.ts';
import type { StateKind } from '../manifest/types.ts';
import { approvalKind, APPROVAL_KIND, type ApprovalMessage } from '../approvals/actor.ts';
import { ApprovalService } from '../approvals/service.ts';
import { WorkflowExecutionService, type WorkflowSource } from '../service.ts';
import os from 'node:os';
import path from 'node:path';
import { ProcessRuntime } from '../../agents/runtime/process.ts';
import { systemRunner, type SystemSandbox } from '../states/system.ts';
import { subworkflowRunner } from '../states/subworkflow.ts';
import { WORKFLOW_KIND, workflowKind, type WorkflowMessage } from './actor.ts';
import type { StateRunner } from './runner-types.ts';
import type { EngineDeps } from './run.ts';
import { TerminalCache, Wakers } from './wakers.ts';
import { StepWriter, type WriterOptions } from './writer.ts';
import { LeaseRenewer } from '../../storage/lease-renewer.ts';
import { sweepIntervalFor } from '../../actors/leased-row/sweeper.ts';
import type { WorkflowExecutionRow } from './repo.ts';
import { sweepFinds } from './sweep.ts';
import { LocalPost, type Post } from '../../actors/tell.ts';
import { Parker } from './parking.ts';

/** spec.workflow.park_after_seconds' default: a run idle this long on a Human state leaves memory. */
export const DEFAULT_PARK_AFTER_MS = 10_000;
/** The parked-run safety-net scan when spec.workflow.poll_seconds is not set. */
const DEFAULT_SCAN_MS = 30_000;

/**
 * How long a workflow row's claim lasts without renewal (renewed every quarter of it, all of a node's rows in one
 * statement). It bounds controller failover: another controller takes a dead one's runs over within the lease plus
 * its sweep interval (a sixth of it, sweepIntervalFor) plus the interrupted state's re-run; 3 s keeps that under 5 s
 * p99 (docs/BENCHMARKS.md, controller failover).
 */
export const WORKFLOW_LEASE_MS = 3_000;

export interface WorkflowCapability {
  runs: WorkflowExecutionService;
  approvals: ApprovalService;
  /** For recoverAll at start-up: workflow runs first, then approval timers. */
  kinds: ActorKind<ActorMessage>[];
  writer: StepWriter;
  wakers: Wakers;
  /** Renews the claims of every run this node drives, one statement per third of the lease. */
  renewer: LeaseRenewer;
  /**
   * Starts the periodic sweep that takes over runs (and approval timers) whose owner's claim expired — another
   * controller died — without waiting for a restart. Answers the function that stops it.
   */
  startSweeper(intervalMs?: number): () => Promise<void>;
  /** Parks idle waiting runs and brings them back (parking.ts). */
  parker: Parker;
}

/** System states in a bubblewrap sandbox (never unsandboxed), per-run scratch workspaces under the tmpdir. */
/** The System states' sandbox when none is given; `close` ends its runtime (its spawner helper) for an owner that stops. */
export function defaultSystemSandbox(logger: Logger): SystemSandbox & { close(): void } {
  const runtime = new ProcessRuntime({ logger, sandbox: 'bwrap' });
  return { runtime: () => runtime, scratchDir: path.join(os.tmpdir(), 'orch-workflows'), close: () => runtime.close() };
}

export function startWorkflowCapability(o: {
  db: Db;
  bus: EventBus;
  actors: ActorRuntime;
  nodeId: string;
  workflows: WorkflowSource;
  logger: Logger;
  /** Runners for Agent, ParallelAgents, ContainerRun, ParallelContainerRun (System and Subworkflow are added here). */
  runners?: Partial<Record<StateKind, StateRunner<never>>>;
  leaseMs?: number;
  /** The safety-net poll of waiting runs (spec.workflow.poll_seconds); wake-ups come by message (post). */
  pollMs?: number;
  /** A run waiting on a Human state parks (leaves memory) after this long (spec.workflow.park_after_seconds). */
  parkAfterMs?: number;
  /** Messages to actors on any node (src/cluster/tell/post.ts); absent: in-process only (LocalPost). */
  post?: Post;
  writer?: WriterOptions;
  /** spec.storage volumes (storage.ts WorkflowStorage over the node's VolumeService); absent: none are made. */
  storage?: EngineDeps['storage'];
  /** Where System states run (the node's sandbox runtime); default: bubblewrap, scratch workspaces in the tmpdir. */
  system?: SystemSandbox;
}): WorkflowCapability {
  const log = o.logger.child({ component: 'workflows' });
  // Every workflow event this capability publishes is recorded for new subscribers (issue 16: a fresh run's stream
  // costs no history query); the bus is used through the wrapper everywhere below.
  const recent = new RecentWorkflowEvents();
  const bus = recent.wrap(o.bus);
  const leaseMs = o.leaseMs ?? WORKFLOW_LEASE_MS;
  const wakers = new Wakers();
  const writer = new StepWriter(o.db, bus, log, o.writer);
  const fresh = new Map<string, WorkflowExecutionRow>();
  const terminals = new TerminalCache(wakers);
  const renewer = new LeaseRenewer(o.db, {
    table: 'workflow_executions',
    keyColumn: 'id',
    keyType: 'UUID',
    nodeId: o.nodeId,
    ttlMs: leaseMs,
    // A quarter rather than the default third: with a short lease, one slow tick must not let a live claim lapse.
    intervalMs: Math.max(50, Math.round(leaseMs / 4)),
    columns: ['cancel_requested'],
    logger: log,
  }).start();
  const post = o.post ?? new LocalPost();
  // What a message to a run held here does: wake what it waits for (it re-reads the row), or stop it when the row
  // asks for a cancel. False: no live run here (the sender re-reads the lease and follows it).
  const parker = new Parker({
    db: o.db,
    nodeId: o.nodeId,
    actors: o.actors,
    kind: WORKFLOW_KIND,
    logger: log,
    parkAfterMs: o.parkAfterMs ?? DEFAULT_PARK_AFTER_MS,
    scanMs: o.pollMs ?? DEFAULT_SCAN_MS,
    runLeaseMs: leaseMs,
    fresh,
  });
  post.register('workflow', async (key, msg) => {
    // A run leaving memory takes the message once gone; a parked one is spawned again from its row.
    if (parker.holdIfLeaving(key)) return true;
    if (!o.actors.isLive(WORKFLOW_KIND, key)) return parker.deliver(key, msg);
    if (msg.type === 'wake') {
      wakers.wake(msg.topic ?? key);
      return true;
    }
    const res = await o.db.query<{ cancel_requested: boolean }>('SELECT cancel_requested FROM workflow_executions WHERE id = $1', [key]);
    if (res.rows[0]?.cancel_requested === true) o.actors.tell(WORKFLOW_KIND, key, { type: 'cancel' } satisfies WorkflowMessage);
    return true;
  });
  const runs = new WorkflowExecutionService({
    db: o.db, bus: bus, actors: o.actors, workflows: o.workflows, wakers, teller: post, nodeId: o.nodeId, leaseMs, logger: log, fresh, terminals, recent,
    ...(o.pollMs !== undefined ? { pollMs: o.pollMs } : {}),
  });
  const runners: Partial<Record<StateKind, StateRunner<never>>> = {
    ...(o.runners ?? {}),
    System: systemRunner(o.system ?? defaultSystemSandbox(log)) as StateRunner<never>,
    Subworkflow: subworkflowRunner({ children: runs.children() }) as StateRunner<never>,
  };
  const wk = workflowKind({
    db: o.db,
    bus: bus,
    writer,
    wakers,
    logger: log,
    runners,
    nodeId: o.nodeId,
    leaseMs,
    fresh,
    terminals,
    renewer,
    teller: post,
    parker,
    ...(o.pollMs !== undefined ? { pollMs: o.pollMs } : {}),
    ...(o.storage ? { storage: o.storage } : {}),
    onApprovalCreated: (id) => o.actors.spawn(APPROVAL_KIND, id),
  });
  const ak = approvalKind({
    db: o.db,
    nodeId: o.nodeId,
    logger: log,
    // never-rejects: Teller.tell answers an outcome; the run reads the expired approval however it is woken.
    onResolved: (wf) => void post.tell('workflow', wf, { type: 'wake' }),
  });
  o.actors.register<WorkflowMessage>(wk);
  o.actors.register<ApprovalMessage>(ak);
  // One statement a pass (sweep.ts): the runs and approval timers to take over, and the lapsed parking leases.
  // Adoption runs beside the next passes, one at a time: its full check of a dead node's many parked runs must not
  // hold up the takeover of lapsed live runs (controller failover).
  let adopting = false;
  const sweep = async (): Promise<void> => {
    const found = await sweepFinds(o.db, o.nodeId);
    for (const id of found.runs) if (!o.actors.isLive(wk.name, id)) o.actors.spawn(wk.name, id);
    for (const id of found.approvals) if (!o.actors.isLive(ak.name, id)) o.actors.spawn(ak.name, id);
    if (found.deadParkers.length === 0 || adopting) return;
    adopting = true;
    void parker
      .adoptFrom(found.deadParkers)
      .catch((err: unknown) => log.warn({ err }, 'adopting lapsed parked runs failed'))
      .finally(() => (adopting = false));
  };
  return {
    startSweeper: (intervalMs = sweepIntervalFor(leaseMs)) => {
      parker.start();
      let sweeping = false;
      const timer = setInterval(() => {
        // One pass at a time: a slow database must not pile sweeps up.
        if (sweeping) return;
        sweeping = true;
        sweep()
          .catch((err: unknown) => log.warn({ err }, 'workflow sweep failed'))
          .finally(() => (sweeping = false));
      }, intervalMs);
      timer.unref();
      return async () => {
        clearInterval(timer);
        await parker.stop();
      };
    },
    parker,
    runs,
    approvals: new ApprovalService(o.db, post),
    kinds: [wk as unknown as ActorKind<ActorMessage>, ak as unknown as ActorKind<ActorMessage>],
    writer,
    wakers,
    renewer,
  };
}
