// WorkflowActor: one per non-terminal workflow run this node drives (DESIGN.md). On $recover it claims the row (a
// new epoch fences off any earlier incarnation) and runs the state machine in the background, so it can still take
// `cancel` and lease renewals. A run that throws goes to the supervisor, which recovers the actor from its row.
// The claim, renewal (through the node's batched renewer), lost-lease stop and release are the shared leased-row
// half (actors/leased-row/); this file says what a run is, where a fresh run's claim comes from, and how it gives up.
import type { ActorHandle, ActorKind, ActorMessage } from '../../actors/kind.ts';
import type { EventBus } from '../../bus/bus.ts';
import { LeasedRowBehaviour, type LeasedRowMessage } from '../../actors/leased-row/behaviour.ts';
import { activeWhere } from '../../actors/leased-row/table.ts';
import { claimRow, type RowClaim } from '../../storage/row-lease.ts';
import type { LeaseRenewer } from '../../storage/lease-renewer.ts';
import { insertWorkflowEvents } from './events.ts';
import { WORKFLOW_EXECUTIONS_TABLE, recoverableWorkflowIds, type WorkflowExecutionRow } from './repo.ts';
import { WorkflowRun, type EngineDeps } from './run.ts';

export const WORKFLOW_KIND = 'workflow';

export type WorkflowMessage = LeasedRowMessage;

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

class WorkflowBehaviour extends LeasedRowBehaviour<WorkflowExecutionRow> {
  constructor(
    private readonly s: WorkflowActorSettings,
    actor: ActorHandle<WorkflowMessage>,
  ) {
    super(WORKFLOW_EXECUTIONS_TABLE, s, { logKey: 'workflow_execution', run: 'workflow run', lease: 'workflow' }, actor);
  }

  /** A run this process has just inserted is claimed already (epoch 0): one statement less on the start path. */
  protected override claim(): Promise<RowClaim<WorkflowExecutionRow> | null> {
    const inserted = this.s.fresh?.get(this.actor.key);
    this.s.fresh?.delete(this.actor.key);
    if (inserted && inserted.owner_node === this.s.nodeId && inserted.lease_expires_at) {
      return Promise.resolve({ table: WORKFLOW_EXECUTIONS_TABLE.table, keyColumn: WORKFLOW_EXECUTIONS_TABLE.keyColumn, key: inserted.id, nodeId: this.s.nodeId, epoch: inserted.epoch, expiresAt: inserted.lease_expires_at, row: inserted });
    }
    // A parked run is claimed only by the node it is parked on (another adopts it first, parking.ts); the claim
    // brings it back into memory, so it is no longer parked. ($2 is the claiming node in claimRow's statement.)
    const t = WORKFLOW_EXECUTIONS_TABLE;
    return claimRow<WorkflowExecutionRow>(this.s.db, t.table, t.keyColumn, this.actor.key, this.s.nodeId, this.s.leaseMs, {
      where: `${activeWhere(t)} AND (NOT parked OR owner_node = $2)`,
      set: 'parked = FALSE',
    });
  }

  /** Left memory: a parked run that a message reached meanwhile is spawned again (parking.ts). */
  protected override ended(): void {
    this.s.parker?.settled(this.actor.key);
  }

  protected run(claim: RowClaim<WorkflowExecutionRow>, signal: AbortSignal): Promise<void> {
    return new WorkflowRun(this.s, claim, claim.row).run(signal);
  }
}

export function workflowKind(settings: WorkflowActorSettings): ActorKind<WorkflowMessage> {
  return {
    name: WORKFLOW_KIND,
    recoverableKeys: () => recoverableWorkflowIds(settings.db, settings.nodeId),
    create: (handle) => new WorkflowBehaviour(settings, handle),
    giveUp: async (key, reason) => {
      // No endless crash loop: the run fails with the reason (the actor is gone, so no owner check). A parked run
      // (its actor crashed each time it was spawned again) is no longer parked: a failed row left parked was read
      // by every full check of its node's parked runs and moved by every adoption.
      const events = await settings.db.tx(async (tx) => {
        const res = await tx.query<{ last_seq: number; current_state: string | null }>(
          `UPDATE workflow_executions SET status = 'failed', error = $2, parked = FALSE, last_seq = last_seq + 1, completed_at = now(), updated_at = now()
           WHERE id = $1 AND ${activeWhere(WORKFLOW_EXECUTIONS_TABLE)} RETURNING last_seq, current_state`,
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
