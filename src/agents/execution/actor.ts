// ExecutionActor: one per non-terminal execution row this node runs (DESIGN.md). On $recover it claims the row
// (a new epoch fences off any earlier incarnation), then runs the refinement loop in the background so that it
// can still take `cancel` and lease-renewal messages. A loop that throws goes to the supervisor, which recovers
// the actor from its row: the loop resumes from the journal. The claim, renewal, lost-lease stop and release are the
// shared leased-row half (actors/leased-row/); this file says what an execution runs and how it gives up.
import type { ActorHandle, ActorKind, ActorMessage } from '../../actors/kind.ts';
import { LeasedRowBehaviour, type LeasedRowMessage } from '../../actors/leased-row/behaviour.ts';
import { activeWhere, recoverableRowKeys } from '../../actors/leased-row/table.ts';
import type { LeaseRenewer } from '../../storage/lease-renewer.ts';
import type { RowClaim } from '../../storage/row-lease.ts';
import { ExecutionLoop, type LoopDeps } from './loop.ts';
import { appendExecutionEvent } from './events.ts';
import { EXECUTIONS_TABLE, type ExecutionRow } from './repo.ts';

export const EXECUTION_KIND = 'execution';

export type ExecutionMessage = LeasedRowMessage;

export interface ExecutionActorSettings extends LoopDeps {
  leaseMs: number;
  /** Renews every execution claim of this node in one statement per tick. Absent: each actor renews its own row. */
  renewer?: LeaseRenewer | undefined;
  /**
   * Called once an execution's terminal state is written here (the node wakes the workflow run waiting on it).
   * `workflowExecutionId`: the run it belongs to as the caller knows it (null: none), so the node need not read it
   * back; undefined: not known here, the node reads the row.
   */
  onEnded?: (executionId: string, workflowExecutionId?: string | null) => void;
}

class ExecutionBehaviour extends LeasedRowBehaviour<ExecutionRow> {
  constructor(
    private readonly s: ExecutionActorSettings,
    actor: ActorHandle<ExecutionMessage>,
  ) {
    super(EXECUTIONS_TABLE, s, { logKey: 'execution', run: 'execution', lease: 'execution' }, actor);
  }

  /** The refinement loop; after a crash or a takeover it resumes from the journal. */
  protected run(claim: RowClaim<ExecutionRow>, signal: AbortSignal): Promise<void> {
    return new ExecutionLoop(this.s, claim, claim.row).run(signal).then(() => this.s.onEnded?.(claim.key, claim.row.workflow_execution_id));
  }
}

export function executionKind(settings: ExecutionActorSettings): ActorKind<ExecutionMessage> {
  return {
    name: EXECUTION_KIND,
    recoverableKeys: () => recoverableRowKeys(settings.db, EXECUTIONS_TABLE, settings.nodeId),
    create: (handle) => new ExecutionBehaviour(settings, handle),
    giveUp: async (key, reason) => {
      // No endless crash loop: the execution fails with the reason, without an owner check (the actor is gone).
      const event = await settings.db.tx(async (tx) => {
        const res = await tx.query(
          `UPDATE executions SET status = 'failed', reason = $2, completed_at = now(), updated_at = now()
           WHERE id = $1 AND ${activeWhere(EXECUTIONS_TABLE)}`,
          [key, reason],
        );
        if (res.rowCount === 0) return null;
        return appendExecutionEvent(tx, key, 'execution_failed', 'terminal', {
          execution_id: key,
          reason,
          total_iterations: 0,
          failed_at: new Date().toISOString(),
        });
      });
      if (event) await settings.bus.publish(event).catch(() => undefined);
      if (event) settings.onEnded?.(key);
      settings.logger.error({ execution: key, reason }, 'execution actor gave up');
    },
  };
}

export type { ActorMessage };
