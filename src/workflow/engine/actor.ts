// WorkflowActor: one per non-terminal workflow run this node drives (DESIGN.md). On $recover it claims the row (a
// new epoch fences off any earlier incarnation) and runs the state machine in the background, so it can still take
// `cancel` and lease renewals. A run that throws goes to the supervisor, which recovers the actor from its row.
import type { ActorHandle, ActorKind, ActorMessage, Behaviour } from '../../actors/kind.ts';
import type { Logger } from '../../logging/logger.ts';
import type { EventBus } from '../../bus/bus.ts';
import { claimRow, releaseRow, renewRow, type RowClaim, type RowFence } from '../../storage/row-lease.ts';
import type { LeaseRenewer } from '../../storage/lease-renewer.ts';
import { CancelledByUser, NodeShuttingDown, isHandOver } from '../../agents/execution/errors.ts';
import { insertWorkflowEvents } from './events.ts';
import { isTerminalStatus, recoverableWorkflowIds, type WorkflowExecutionRow } from './repo.ts';
import { WorkflowRun, type EngineDeps } from './run.ts';

export const WORKFLOW_KIND = 'workflow';

export type WorkflowMessage =
  | { type: 'cancel'; reply?: (accepted: boolean) => void }
  | { type: 'renew' }
  | { type: 'renewed'; cancelRequested: boolean }
  | { type: 'lease_lost'; error: Error }
  | { type: 'run_ended' }
  | { type: 'run_crashed'; error: Error };

export interface WorkflowActorSettings extends EngineDeps {
  nodeId: string;
  leaseMs: number;
  bus: EventBus;
  /**
   * Rows this process has just inserted, claimed for it (owner = this node, epoch 0): the actor takes the claim as
   * inserted instead of claiming again. A restarted process has none, so recovery always claims (a new epoch).
   */
  fresh?: Map<string, WorkflowExecutionRow>;
  /**
   * Renews every run's claim of this node in one statement per tick (lease-renewer.ts). Absent: each actor renews
   * its own row every third of the lease.
   */
  renewer?: LeaseRenewer;
}

class WorkflowBehaviour implements Behaviour<WorkflowMessage> {
  private fence: RowFence | undefined;
  private abort: AbortController | undefined;
  private running: Promise<void> | undefined;
  private readonly log: Logger;

  constructor(
    private readonly s: WorkflowActorSettings,
    private readonly actor: ActorHandle<WorkflowMessage>,
  ) {
    this.log = s.logger.child({ actor: WORKFLOW_KIND, workflow_execution: actor.key });
  }

  async recover(): Promise<void> {
    const inserted = this.s.fresh?.get(this.actor.key);
    this.s.fresh?.delete(this.actor.key);
    const claim: RowClaim<WorkflowExecutionRow> | null =
      inserted && inserted.owner_node === this.s.nodeId && inserted.lease_expires_at
        ? { table: 'workflow_executions', keyColumn: 'id', key: inserted.id, nodeId: this.s.nodeId, epoch: inserted.epoch, expiresAt: inserted.lease_expires_at, row: inserted }
        : await claimRow<WorkflowExecutionRow>(this.s.db, 'workflow_executions', 'id', this.actor.key, this.s.nodeId, this.s.leaseMs, {
            where: `status IN ('running', 'waiting_for_human_input')`,
          });
    if (!claim || isTerminalStatus(claim.row.status)) {
      this.actor.stop();
      return;
    }
    this.fence = claim;
    const abort = new AbortController();
    this.abort = abort;
    if (claim.row.cancel_requested) abort.abort(new CancelledByUser());
    const run = new WorkflowRun(this.s, claim, claim.row);
    if (this.s.renewer) {
      // The renewer calls back outside this actor's turn; the messages bring its news into the mailbox.
      this.s.renewer.hold(claim, {
        renewed: (row) => {
          if (row.cancel_requested === true) this.actor.schedule(0, { type: 'renewed', cancelRequested: true });
        },
        lost: (error) => this.actor.schedule(0, { type: 'lease_lost', error }),
      });
    } else this.actor.schedule(this.s.leaseMs / 3, { type: 'renew' });
    this.running = run.run(abort.signal).then(
      () => this.actor.schedule(0, { type: 'run_ended' }),
      (error: Error) => {
        if (isHandOver(error)) {
          this.log.info({ reason: error.message }, 'workflow run handed over');
          // Lost to another node: leave the runtime, so a later recovery here can spawn the run again.
          if (!(error instanceof NodeShuttingDown)) this.actor.schedule(0, { type: 'run_ended' });
          return;
        }
        this.actor.schedule(0, { type: 'run_crashed', error });
      },
    );
  }

  async handle(msg: WorkflowMessage): Promise<void> {
    switch (msg.type) {
      case 'cancel':
        this.abort?.abort(new CancelledByUser());
        msg.reply?.(this.abort !== undefined);
        return;
      case 'renew': {
        if (!this.fence) return;
        try {
          const renewed = await renewRow<WorkflowExecutionRow>(this.s.db, this.fence, this.s.leaseMs);
          // A cancel asked on another node (which cannot reach this actor) is seen here.
          if (renewed.row.cancel_requested && this.abort && !this.abort.signal.aborted) this.abort.abort(new CancelledByUser());
        } catch (err) {
          this.log.warn({ err }, 'lost the workflow lease; stopping here');
          this.abort?.abort(err);
          this.fence = undefined;
          return;
        }
        this.actor.schedule(this.s.leaseMs / 3, { type: 'renew' });
        return;
      }
      case 'renewed':
        // A cancel asked on another node (which cannot reach this actor) is seen here.
        if (msg.cancelRequested && this.abort && !this.abort.signal.aborted) this.abort.abort(new CancelledByUser());
        return;
      case 'lease_lost':
        if (!this.fence) return;
        this.log.warn({ err: msg.error }, 'lost the workflow lease; stopping here');
        this.abort?.abort(msg.error);
        this.fence = undefined;
        return;
      case 'run_ended':
        if (this.fence) this.s.renewer?.release(this.fence);
        this.fence = undefined;
        this.actor.stop();
        return;
      case 'run_crashed':
        // The supervisor recovers the actor with a new claim (held anew) or gives up: this claim is done either way.
        if (this.fence) this.s.renewer?.release(this.fence);
        throw msg.error;
    }
  }

  async shutdown(): Promise<void> {
    const fence = this.fence;
    this.abort?.abort(new NodeShuttingDown());
    if (this.running) await Promise.race([this.running, new Promise((r) => setTimeout(r, 5000))]);
    this.fence = undefined;
    if (fence) {
      this.s.renewer?.release(fence);
      await releaseRow(this.s.db, fence).catch(() => undefined);
    }
  }
}

export function workflowKind(settings: WorkflowActorSettings): ActorKind<WorkflowMessage> {
  return {
    name: WORKFLOW_KIND,
    recoverableKeys: () => recoverableWorkflowIds(settings.db, settings.nodeId),
    create: (handle) => new WorkflowBehaviour(settings, handle),
    giveUp: async (key, reason) => {
      // No endless crash loop: the run fails with the reason (the actor is gone, so no owner check).
      const events = await settings.db.tx(async (tx) => {
        const res = await tx.query<{ last_seq: number; current_state: string | null }>(
          `UPDATE workflow_executions SET status = 'failed', error = $2, last_seq = last_seq + 1, completed_at = now(), updated_at = now()
           WHERE id = $1 AND status IN ('running', 'waiting_for_human_input') RETURNING last_seq, current_state`,
          [key, reason],
        );
        const row = res.rows[0];
        if (!row) return [];
        return insertWorkflowEvents(tx, [
          {
            executionId: key,
            firstSeq: row.last_seq,
            events: [{ type: 'WorkflowExecutionFailed', key: 'terminal', state_name: row.current_state ?? undefined, payload: { status: 'failed', reason, failed_at: new Date().toISOString() } }],
          },
        ]);
      });
      for (const e of events) await settings.bus.publish(e).catch(() => undefined);
      settings.logger.error({ workflow_execution: key, reason }, 'workflow actor gave up');
    },
  };
}

export type { ActorMessage };
