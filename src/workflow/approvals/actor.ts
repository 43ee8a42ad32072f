// ApprovalActor: one per pending approval that has a timeout (DESIGN.md). It is a timer over the approval row:
// on $recover it reads the row's deadline (fixed when the Human state was entered) and fires at that moment, even
// after a restart (late by the downtime at most, never re-counted from the restart). Firing applies the state's
// default_response (or records the expiry without one) with a guarded UPDATE, so an approve racing the timeout
// resolves the approval exactly once, and wakes the waiting WorkflowActor.
import type { ActorHandle, ActorKind, ActorMessage, Behaviour } from '../../actors/kind.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Db } from '../../storage/db.ts';
import { APPROVAL_TIMER_HORIZON_MS, getApproval, recoverableApprovalIds, resolveApproval } from './repo.ts';

export const APPROVAL_KIND = 'approval';

export type ApprovalMessage = { type: 'expire' };

export interface ApprovalActorSettings {
  db: Db;
  nodeId: string;
  logger: Logger;
  /** Called after the approval was resolved by its timeout (wakes the run). */
  onResolved: (workflowExecutionId: string) => void;
}

// setTimeout holds at most 2^31-1 ms; a longer timeout re-arms on each firing until the deadline is reached.
const MAX_DELAY = 2_147_000_000;

class ApprovalBehaviour implements Behaviour<ApprovalMessage> {
  constructor(
    private readonly s: ApprovalActorSettings,
    private readonly actor: ActorHandle<ApprovalMessage>,
  ) {}

  async recover(): Promise<void> {
    const row = await getApproval(this.s.db, this.actor.key);
    // A deadline further off than the horizon holds no timer: the workflow sweep starts this actor again when it
    // comes near (recoverableApprovalIds), so a run waiting days costs nothing in memory meanwhile.
    if (!row || row.status !== 'pending' || !row.deadline || row.deadline.getTime() - Date.now() > APPROVAL_TIMER_HORIZON_MS) {
      this.actor.stop();
      return;
    }
    this.actor.schedule(Math.min(MAX_DELAY, row.deadline.getTime() - Date.now()), { type: 'expire' });
  }

  async handle(msg: ApprovalMessage): Promise<void> {
    if (msg.type !== 'expire') return;
    const row = await getApproval(this.s.db, this.actor.key);
    if (!row || row.status !== 'pending' || !row.deadline) {
      this.actor.stop();
      return;
    }
    const left = row.deadline.getTime() - Date.now();
    if (left > 0) {
      this.actor.schedule(Math.min(MAX_DELAY, left), { type: 'expire' });
      return;
    }
    const resolved = await resolveApproval(
      this.s.db,
      row.id,
      { status: 'expired', response: row.default_response, feedback: row.default_response, resolvedBy: 'timeout' },
      { deadlinePassed: true },
    );
    if (!resolved) {
      const again = await getApproval(this.s.db, row.id);
      if (again?.status === 'pending') {
        this.actor.schedule(50, { type: 'expire' });
        return;
      }
    } else {
      this.s.logger.info({ approval: row.id, workflow: row.workflow_execution_id, default_response: row.default_response }, 'approval timed out');
    }
    this.s.onResolved(row.workflow_execution_id);
    this.actor.stop();
  }
}

export function approvalKind(settings: ApprovalActorSettings): ActorKind<ApprovalMessage> {
  return {
    name: APPROVAL_KIND,
    recoverableKeys: () => recoverableApprovalIds(settings.db, settings.nodeId),
    create: (handle) => new ApprovalBehaviour(settings, handle),
    // A timer that keeps crashing: leave the approval pending (a person can still answer it) and say so.
    giveUp: async (key, reason) => {
      settings.logger.error({ approval: key, reason }, 'approval actor gave up; the approval stays pending');
    },
  };
}

export type { ActorMessage };
