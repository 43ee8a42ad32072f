// ExecutionActor: one per non-terminal execution row this node runs (DESIGN.md). On $recover it claims the row
// (a new epoch fences off any earlier incarnation), then runs the refinement loop in the background so that it
// can still take `cancel` and lease-renewal messages. A loop that throws goes to the supervisor, which recovers
// the actor from its row: the loop resumes from the journal.
import type { ActorHandle, ActorKind, ActorMessage, Behaviour } from '../../actors/kind.ts';
import type { Logger } from '../../logging/logger.ts';
import { claimRow, renewRow, releaseRow, type RowFence } from '../../storage/row-lease.ts';
import { CancelledByUser, NodeShuttingDown, isHandOver } from './errors.ts';
import { ExecutionLoop, type LoopDeps } from './loop.ts';
import { appendExecutionEvent } from './events.ts';
import { isTerminal, recoverableExecutionIds, type ExecutionRow } from './repo.ts';

export const EXECUTION_KIND = 'execution';

export type ExecutionMessage =
  | { type: 'cancel'; reply?: (accepted: boolean) => void }
  | { type: 'renew' }
  | { type: 'loop_ended' }
  | { type: 'loop_crashed'; error: Error };

export interface ExecutionActorSettings extends LoopDeps {
  leaseMs: number;
}

class ExecutionBehaviour implements Behaviour<ExecutionMessage> {
  private fence: RowFence | undefined;
  private abort: AbortController | undefined;
  private running: Promise<void> | undefined;
  private readonly log: Logger;

  constructor(
    private readonly s: ExecutionActorSettings,
    private readonly actor: ActorHandle<ExecutionMessage>,
  ) {
    this.log = s.logger.child({ actor: EXECUTION_KIND, execution: actor.key });
  }

  async recover(): Promise<void> {
    const claim = await claimRow<ExecutionRow>(this.s.db, 'executions', 'id', this.actor.key, this.s.nodeId, this.s.leaseMs, {
      where: `status IN ('pending', 'running')`,
    });
    if (!claim) {
      this.actor.stop();
      return;
    }
    this.fence = claim;
    const row = claim.row;
    if (isTerminal(row.status)) {
      this.actor.stop();
      return;
    }
    const abort = new AbortController();
    this.abort = abort;
    if (row.cancel_requested) abort.abort(new CancelledByUser());
    const loop = new ExecutionLoop(this.s, claim, row);
    this.actor.schedule(this.s.leaseMs / 3, { type: 'renew' });
    this.running = loop.run(abort.signal).then(
      () => this.actor.schedule(0, { type: 'loop_ended' }),
      (error: Error) => {
        if (isHandOver(error)) {
          this.log.info({ reason: error.message }, 'execution handed over');
          // The row belongs to another node (or this one is stopping): this actor has nothing left to do, and a
          // live entry would keep this node from recovering the execution should the lease come back.
          this.actor.schedule(0, { type: 'loop_ended' });
          return;
        }
        this.actor.schedule(0, { type: 'loop_crashed', error });
      },
    );
  }

  async handle(msg: ExecutionMessage): Promise<void> {
    switch (msg.type) {
      case 'cancel':
        this.abort?.abort(new CancelledByUser());
        msg.reply?.(this.abort !== undefined);
        return;
      case 'renew': {
        if (!this.fence) return;
        try {
          const renewed = await renewRow<ExecutionRow>(this.s.db, this.fence, this.s.leaseMs);
          // A cancel asked on another node (a controller that forwarded the execution here) is seen here.
          if (renewed.row.cancel_requested && this.abort && !this.abort.signal.aborted) this.abort.abort(new CancelledByUser());
        } catch (err) {
          this.log.warn({ err }, 'lost the execution lease; stopping here');
          this.abort?.abort(err);
          this.fence = undefined;
          return;
        }
        this.actor.schedule(this.s.leaseMs / 3, { type: 'renew' });
        return;
      }
      case 'loop_ended':
        this.fence = undefined;
        this.actor.stop();
        return;
      case 'loop_crashed':
        // Thrown inside the actor so that the supervisor restarts it from its row (and gives up after repeats).
        throw msg.error;
    }
  }

  async shutdown(): Promise<void> {
    const fence = this.fence;
    this.abort?.abort(new NodeShuttingDown());
    // Let the loop kill its sandbox before the stores close (bounded: a stuck engine must not hang the stop).
    if (this.running) await Promise.race([this.running, new Promise((r) => setTimeout(r, 5000))]);
    this.fence = undefined;
    // Give the row up so the next start (or another node) resumes it without waiting for the lease to expire.
    if (fence) await releaseRow(this.s.db, fence).catch(() => undefined);
  }
}

export function executionKind(settings: ExecutionActorSettings): ActorKind<ExecutionMessage> {
  return {
    name: EXECUTION_KIND,
    recoverableKeys: () => recoverableExecutionIds(settings.db, settings.nodeId),
    create: (handle) => new ExecutionBehaviour(settings, handle),
    giveUp: async (key, reason) => {
      // No endless crash loop: the execution fails with the reason, without an owner check (the actor is gone).
      const event = await settings.db.tx(async (tx) => {
        const res = await tx.query(
          `UPDATE executions SET status = 'failed', reason = $2, completed_at = now(), updated_at = now()
           WHERE id = $1 AND status IN ('pending', 'running')`,
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
      settings.logger.error({ execution: key, reason }, 'execution actor gave up');
    },
  };
}

export type { ActorMessage };
