// Parked (passivated) workflow runs (issue 18; docs/WORKFLOWS.md "Idle runs are parked"). A run waiting on a Human
// state, or on a child run in a Subworkflow state, for longer than spec.workflow.park_after_seconds writes
// `parked = TRUE` on its row and leaves memory: no actor, no timer, no lease renewal of its own. What still says who holds it is the row (owner_node) plus this node's
// one parking lease (workflow_parking_leases), renewed by one tiny statement. It comes back:
//   - on a message (tell: an approval, a signal, a cancel, given on any node): delivered here, the run is spawned
//     again from its row (its claim clears `parked`), re-reads what it waits for and moves on;
//   - from the safety-net scan, one statement per poll period reading only what changed since the previous one
//     (approvals answered, child runs ended, cancels asked, deadlines come: a message lost with a dying sender, a
//     Subworkflow state's timeout kept in the row's wake_at); every parked row is checked only at start and after an
//     adoption, in keyset pages;
//   - after this node dies: its parking lease lapses and another controller adopts its parked runs in one statement
//     (owner_node and epoch move, the rows stay parked), then scans them like its own.
// Approval deadlines need no timer per run: the workflow sweep starts an approval's timer only when its deadline is
// near (APPROVAL_TIMER_HORIZON_MS), so a run parked for days holds nothing until its deadline approaches.
import type { ActorRuntime } from '../../actors/runtime.ts';
import type { TellMessage } from '../../actors/tell.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Queryable } from '../../storage/db.ts';
import type { RowFence } from '../../storage/row-lease.ts';
import { ttlParam } from '../../storage/sql-ident.ts';
import type { WorkflowExecutionRow } from './repo.ts';

/** How long this node's parking lease lasts unrenewed: past it, another controller adopts its parked runs. */
export const PARKING_LEASE_MS = 10_000;

/** Most parked runs moved or woken by one statement; the rest follow on the next pass. */
const BATCH = 2_000;

/** Nodes other than $1 whose parking lease lapsed: their parked runs are adopted (also a part of engine/sweep.ts). */
export const DEAD_PARKERS_SQL = 'SELECT node_id FROM workflow_parking_leases WHERE expires_at < now() AND node_id <> $1';

export interface ParkerOptions {
  db: Queryable;
  nodeId: string;
  actors: ActorRuntime;
  /** The actor kind of a workflow run. */
  kind: string;
  logger: Logger;
  /** A waiting run parks after this long (spec.workflow.park_after_seconds); Infinity: never. */
  parkAfterMs: number;
  /** The safety-net scan of parked runs (spec.workflow.poll_seconds). */
  scanMs: number;
  /** A run's own claim (the workflow lease), taken when a message brings a parked run back. */
  runLeaseMs: number;
  /** Claims handed to the actor that is spawned next for the key (actor.ts `fresh`). */
  fresh: Map<string, WorkflowExecutionRow>;
  /** This node's parking lease (default PARKING_LEASE_MS). */
  leaseMs?: number;
}

/** The status a run is parked in: waiting on a Human state, or running a state that only waits (a Subworkflow). */
export type ParkedStatus = 'waiting_for_human_input' | 'running';

/**
 * How far back each pass of the scan looks past its previous one: a fact whose statement began before the previous
 * pass but committed after it read (a slow commit) is still seen. Bounded: a pass reads the facts of its window.
 */
const SCAN_OVERLAP_MS = 60_000;

interface Parking {
  /** A message came for the run while it was leaving memory: spawn it again once it has left. */
  woken: boolean;
}

export class Parker {
  /** Runs between deciding to park and leaving the runtime. */
  private readonly parking = new Map<string, Parking>();
  /** This node's local clock until which its parking lease surely holds (renewed with a margin). */
  private leaseGoodUntil = 0;
  private readonly leaseMs: number;
  private readonly log: Logger;
  private timers: NodeJS.Timeout[] = [];
  private scanning = false;
  /** The database time of the previous pass of the scan (or full check): the next pass reads facts since then. */
  private scannedAt: Date | undefined;
  /** Parking is on only between start (the lease is kept, lapsed nodes adopted, parked runs scanned) and stop. */
  private started = false;
  private stopped = false;

  constructor(private readonly o: ParkerOptions) {
    this.leaseMs = o.leaseMs ?? PARKING_LEASE_MS;
    this.log = o.logger.child({ component: 'workflow-parking' });
  }

  get parkAfterMs(): number {
    return this.o.parkAfterMs;
  }

  /** Runs leaving memory right now (a test's and the metrics' view). */
  get leaving(): number {
    return this.parking.size;
  }

  /**
   * Parks the run held under `fence`, waiting in its current visit (status `status`: a Human state waits as
   * 'waiting_for_human_input', a Subworkflow state as 'running'); `wakeAt`: when the visit times out, if it does (the
   * scan brings the run back then). True when the row now says parked, and the caller must leave memory (throw
   * Passivated) and call `settled` once gone. False: not parked (this node's parking lease could not be made sure,
   * or `stillWaiting()` said a message already came): the caller keeps waiting in memory.
   * Throws LEASE_LOST-free: a lost claim answers false too (the run's own writes find out and stop it).
   */
  async park(fence: RowFence, stillWaiting: () => boolean, status: ParkedStatus = 'waiting_for_human_input', wakeAt?: Date): Promise<boolean> {
    if (!this.started || this.stopped || this.parking.has(fence.key)) return false;
    if (!(await this.ensureLease())) return false;
    const p: Parking = { woken: false };
    this.parking.set(fence.key, p);
    // From here every message to the run is held in `p` (deliver looks here first), so none is lost between the
    // decision and the actor's exit; one that came before is seen by the waiter.
    if (!stillWaiting()) {
      this.parking.delete(fence.key);
      return false;
    }
    try {
      // Only under a live parking lease of this node: a row parked without one could never be adopted.
      const res = await this.o.db.query(
        `UPDATE workflow_executions SET parked = TRUE, lease_expires_at = NULL, wake_at = $5, updated_at = now()
         WHERE id = $1 AND owner_node = $2 AND epoch = $3 AND status = $4 AND NOT cancel_requested
           AND EXISTS (SELECT 1 FROM workflow_parking_leases p WHERE p.node_id = $2 AND p.expires_at > now())`,
        [fence.key, fence.nodeId, fence.epoch, status, wakeAt ?? null],
      );
      if (res.rowCount === 1) return true;
    } catch (err) {
      this.parking.delete(fence.key);
      throw err;
    }
    this.parking.delete(fence.key);
    return false;
  }

  /** The parked run's actor has left the runtime: a message that came meanwhile spawns it again now. */
  settled(key: string): void {
    const p = this.parking.get(key);
    this.parking.delete(key);
    if (p?.woken && !this.stopped) this.o.actors.spawn(this.o.kind, key);
  }

  /** A message for a run that is leaving memory right now: held, and the run spawned again once gone. */
  holdIfLeaving(key: string): boolean {
    const p = this.parking.get(key);
    if (p) p.woken = true;
    return p !== undefined;
  }

  /**
   * A message for a run not live here: true when it is parked on this node (claimed and spawned again; it reads the
   * fact from its row), or is leaving memory right now (spawned again once gone). False: not held here.
   */
  async deliver(key: string, _msg: TellMessage): Promise<boolean> {
    if (this.holdIfLeaving(key)) return true;
    // The claim itself is the check (one statement instead of a read and a claim): only a run parked here is taken,
    // with a new epoch; the actor then starts from this claim (the `fresh` hand-over a new run uses too).
    // The same statement reads the approval of the visit the run is parked in (by the UNIQUE (run, state, visit)
    // index): a run woken by its answer moves on without reading it again.
    const res = await this.o.db.query<WorkflowExecutionRow>(
      `WITH c AS (
         UPDATE workflow_executions SET parked = FALSE, epoch = epoch + 1, lease_expires_at = now() + ($3::INT * INTERVAL '1 millisecond')
         WHERE id = $1 AND parked AND owner_node = $2 RETURNING *)
       SELECT c.*, (SELECT json_build_object('id', a.id, 'status', a.status, 'response', a.response, 'feedback', a.feedback)
                    FROM approvals a WHERE a.workflow_execution_id = c.id AND a.state_name = c.current_state
                      AND a.visit = COALESCE((c.visits ->> c.current_state)::INT, 1)) AS answer
       FROM c`,
      [key, this.o.nodeId, ttlParam(this.o.runLeaseMs)],
    );
    const row = res.rows[0];
    if (!row) return false;
    this.o.fresh.set(key, row);
    this.o.actors.spawn(this.o.kind, key);
    return true;
  }

  /** Is this node's parking lease sure for a while? Renews it when not (one upsert). */
  private async ensureLease(): Promise<boolean> {
    if (Date.now() < this.leaseGoodUntil - this.leaseMs / 2) return true;
    try {
      await this.renewLease();
      return true;
    } catch (err) {
      this.log.warn({ err }, 'parking lease not renewed; runs stay in memory');
      return false;
    }
  }

  private async renewLease(): Promise<void> {
    const t0 = Date.now();
    await this.o.db.query(
      `INSERT INTO workflow_parking_leases (node_id, expires_at) VALUES ($1, now() + ($2::INT * INTERVAL '1 millisecond'))
       ON CONFLICT (node_id) DO UPDATE SET expires_at = excluded.expires_at`,
      [this.o.nodeId, ttlParam(this.leaseMs)],
    );
    // Counted from before the statement was sent: the database's now() is no earlier than that.
    this.leaseGoodUntil = t0 + this.leaseMs;
  }

  /**
   * Adopts the parked runs of nodes whose parking lease lapsed (dead, frozen, cut off): owner and epoch move here in
   * one statement per batch, the rows stay parked. Answers how many were adopted. Exported for tests.
   */
  async adopt(): Promise<number> {
    const dead = await this.o.db.query<{ node_id: string }>(DEAD_PARKERS_SQL, [this.o.nodeId]);
    return this.adoptFrom(dead.rows.map((r) => r.node_id));
  }

  /** adopt() once the nodes whose parking lease lapsed are known (the engine's sweep reads them with its own). */
  async adoptFrom(dead: readonly string[]): Promise<number> {
    if (dead.length === 0 || this.stopped) return 0;
    if (!(await this.ensureLease())) return 0;
    let adopted = 0;
    for (const node_id of dead) {
      // The new epoch fences the old holder off, should it come back and try to write one of them.
      const res = await this.o.db.query(
        `UPDATE workflow_executions SET owner_node = $1, epoch = epoch + 1, updated_at = now()
         WHERE id IN (SELECT id FROM workflow_executions WHERE parked AND owner_node = $2 LIMIT ${BATCH})
           AND parked AND owner_node = $2
           AND EXISTS (SELECT 1 FROM workflow_parking_leases p WHERE p.node_id = $2 AND p.expires_at < now())`,
        [this.o.nodeId, node_id],
      );
      adopted += res.rowCount;
      if (res.rowCount === 0) {
        // Nothing of it left parked: forget its lease (a node that comes back writes a new one).
        await this.o.db.query('DELETE FROM workflow_parking_leases WHERE node_id = $1 AND expires_at < now() AND NOT EXISTS (SELECT 1 FROM workflow_executions WHERE parked AND owner_node = $1)', [node_id]);
      }
    }
    if (adopted > 0) {
      this.log.info({ adopted, from: dead }, 'adopted the parked runs of nodes whose parking lease lapsed');
      // Their facts may be older than this node's scan window (committed while their holder was dying): all checked.
      await this.checkAll();
    }
    return adopted;
  }

  /**
   * The safety net, one statement per pass: this node's parked runs that something happened to since the previous
   * pass (minus SCAN_OVERLAP_MS) — their approval answered, their child run ended — or that were asked to cancel or
   * whose deadline came, are spawned (each re-reads its row). Every part is read through an index holding only such
   * rows (migration 105), so a pass costs what happened, not the number of runs parked. The first pass (no previous
   * one) is the full check. Answers how many were spawned. Exported for tests.
   */
  async scan(): Promise<number> {
    if (this.scanning) return 0;
    if (this.scannedAt === undefined) return this.checkAll();
    this.scanning = true;
    try {
      const since = new Date(this.scannedAt.getTime() - SCAN_OVERLAP_MS);
      const res = await this.o.db.query<{ at: Date; ids: string[] }>(
        // Approvals and children: the recent facts first (index range scans), then each one's run by primary key in
        // a scalar subquery (never a join that could read every parked run). An answered approval counts only for
        // the visit the run is parked in (a run woken and parked again at its next visit is left alone).
        `SELECT now() AS at, ARRAY(
           SELECT f.id::TEXT FROM (
             SELECT a.workflow_execution_id AS id FROM approvals a
             WHERE a.resolved_at >= $2
               AND (SELECT w.parked AND w.owner_node = $1 AND w.current_state = a.state_name
                    FROM workflow_executions w WHERE w.id = a.workflow_execution_id)
             UNION
             SELECT c.parent_execution_id FROM workflow_executions c
             WHERE c.completed_at >= $2 AND c.parent_execution_id IS NOT NULL
               AND (SELECT w.parked AND w.owner_node = $1 FROM workflow_executions w WHERE w.id = c.parent_execution_id)
             UNION
             SELECT id FROM workflow_executions WHERE parked AND cancel_requested AND owner_node = $1
             UNION
             SELECT id FROM workflow_executions WHERE parked AND wake_at IS NOT NULL AND wake_at <= now() AND owner_node = $1
           ) f LIMIT ${BATCH}) AS ids`,
        [this.o.nodeId, since],
      );
      const row = res.rows[0]!;
      // A full batch may have left some out: the next pass looks from the same point again.
      if (row.ids.length < BATCH) this.scannedAt = row.at;
      const woken = this.spawnAll(row.ids);
      if (woken > 0) this.log.info({ woken }, 'parked runs woken by the safety-net scan');
      return woken;
    } finally {
      this.scanning = false;
    }
  }

  /**
   * The full check, in keyset pages by id: every parked run of this node that should not be parked any more — a
   * Human state whose approval is no longer pending, a Subworkflow state whose child ended, asked to cancel, past its
   * deadline, or no longer in the status it was parked in. Run when the node starts (facts may have come while it
   * was down) and after it adopted a dead node's runs; sets the point the scan's passes start from.
   */
  async checkAll(): Promise<number> {
    if (this.scanning) return 0;
    this.scanning = true;
    try {
      const started = (await this.o.db.query<{ at: Date }>('SELECT now() AS at')).rows[0]!.at;
      let after = '00000000-0000-0000-0000-000000000000';
      let woken = 0;
      for (;;) {
        const res = await this.o.db.query<{ id: string; wake: boolean }>(
          `SELECT w.id::TEXT AS id,
             (w.cancel_requested OR (w.wake_at IS NOT NULL AND w.wake_at <= now())
              OR CASE w.status
                   WHEN 'waiting_for_human_input' THEN NOT EXISTS (SELECT 1 FROM approvals a WHERE a.workflow_execution_id = w.id AND a.status = 'pending')
                   WHEN 'running' THEN EXISTS (SELECT 1 FROM workflow_executions c WHERE c.parent_execution_id = w.id
                                                 AND c.completed_at >= COALESCE(w.last_transition_at, w.started_at, w.created_at))
                   ELSE TRUE END) AS wake
           FROM workflow_executions w
           WHERE w.parked AND w.owner_node = $1 AND w.id > $2::UUID
           ORDER BY w.id LIMIT ${BATCH}`,
          [this.o.nodeId, after],
        );
        woken += this.spawnAll(res.rows.filter((r) => r.wake).map((r) => r.id));
        if (res.rows.length < BATCH) break;
        after = res.rows[res.rows.length - 1]!.id;
      }
      this.scannedAt = started;
      if (woken > 0) this.log.info({ woken }, 'parked runs woken by the full check');
      return woken;
    } finally {
      this.scanning = false;
    }
  }

  private spawnAll(ids: string[]): number {
    let woken = 0;
    for (const id of ids) {
      if (this.o.actors.isLive(this.o.kind, id) || this.parking.has(id)) continue;
      this.o.actors.spawn(this.o.kind, id);
      woken++;
    }
    return woken;
  }

  /**
   * Renews the parking lease (when this node parks anything), scans its own parked runs and, given `adoptEveryMs`,
   * adopts lapsed nodes' runs on a timer of its own; without it the caller reads the lapsed nodes in its sweep and
   * calls adoptFrom (engine/sweep.ts: one statement for the three reads of a pass).
   */
  start(adoptEveryMs?: number): void {
    if (this.started) return;
    this.started = true;
    const every = (ms: number, fn: () => Promise<unknown>, what: string): void => {
      let busy = false;
      const t = setInterval(() => {
        if (busy || this.stopped) return;
        busy = true;
        fn()
          .catch((err: unknown) => this.log.warn({ err }, `${what} failed`))
          .finally(() => (busy = false));
      }, ms);
      t.unref();
      this.timers.push(t);
    };
    // Renewed only while the lease is in use (a node that never parked writes no row).
    every(Math.max(100, Math.round(this.leaseMs / 5)), async () => {
      if (this.leaseGoodUntil > 0) await this.renewLease();
    }, 'parking lease renewal');
    if (adoptEveryMs !== undefined) every(adoptEveryMs, () => this.adopt(), 'adopting lapsed parked runs');
    every(this.o.scanMs, () => this.scan(), 'parked-run scan');
    // At start: runs parked here before a restart whose answer came while this node was down.
    this.claimOwnLease()
      .then(() => this.checkAll())
      .catch((err: unknown) => this.log.warn({ err }, 'parked-run scan at start failed'));
  }

  /** A restarted node renews the lease of the runs it parked before (if any), so they stay its own. */
  private async claimOwnLease(): Promise<void> {
    const res = await this.o.db.query('SELECT 1 FROM workflow_executions WHERE parked AND owner_node = $1 LIMIT 1', [this.o.nodeId]);
    if (res.rowCount > 0) await this.renewLease();
  }

  /**
   * Graceful stop: no more parking; the lease is ended so that another controller adopts this node's parked runs at
   * once (a restart of this node before that renews it and keeps them).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    if (this.leaseGoodUntil > 0) {
      await this.o.db.query('UPDATE workflow_parking_leases SET expires_at = now() WHERE node_id = $1', [this.o.nodeId]).catch((err: unknown) => this.log.warn({ err }, 'ending the parking lease failed'));
    }
  }
}
