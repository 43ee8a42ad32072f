// The half every actor over a leased row shares (DESIGN.md: actors over a durable store, the lease rule): on $recover
// claim the row (a new epoch fences off any earlier incarnation), run the row's work in the background so the actor
// can still take `cancel` and lease news, keep the claim alive, and stop acting the moment the claim is lost. A run
// that throws goes to the supervisor, which recovers the actor from its row.
//
// The claim is kept alive one of two ways, chosen by the kind's settings: a LeaseRenewer that renews all of a node's
// claims on the table in one statement per tick (what the node wires for workflow runs and executions), or, without
// one, each actor renewing its own row every third of the lease.
import type { Logger } from '../../logging/logger.ts';
import type { Queryable } from '../../storage/db.ts';
import type { LeaseRenewer } from '../../storage/lease-renewer.ts';
import { releaseRow, renewRow, type RowClaim, type RowFence } from '../../storage/row-lease.ts';
import { CancelledByUser, NodeShuttingDown, isHandOver } from '../../agents/execution/errors.ts';
import { Passivated, type ActorHandle, type Behaviour } from '../kind.ts';
import { claimLeasedRow, type LeasedTable } from './table.ts';

export type LeasedRowMessage =
  | { type: 'cancel'; reply?: (accepted: boolean) => void }
  /** Per-row renewal (no renewer): renew now, then again a third of the lease later. */
  | { type: 'renew' }
  /** From the renewer: the claim was extended; the row says whether a cancel was asked on another node. */
  | { type: 'renewed'; cancelRequested: boolean }
  /** From the renewer: another node claimed the row (or it is gone). */
  | { type: 'lease_lost'; error: Error }
  | { type: 'ended' }
  | { type: 'crashed'; error: Error };

/** The columns the shared half reads from the row, besides the lease columns row-lease.ts handles. */
export interface LeasedRow {
  status: string;
  cancel_requested: boolean;
}

export interface LeasedRowSettings {
  db: Queryable;
  nodeId: string;
  leaseMs: number;
  logger: Logger;
  /** Present: the batched renewer keeps the claim. Absent: the actor renews its own row. */
  renewer?: LeaseRenewer | undefined;
}

export interface LeasedRowLabels {
  /** The log field that carries the row key, e.g. `execution`. */
  logKey: string;
  /** How the logs name the work (`execution handed over`) and its lease (`lost the execution lease`). */
  run: string;
  lease: string;
}

export abstract class LeasedRowBehaviour<R extends LeasedRow> implements Behaviour<LeasedRowMessage> {
  private fence: RowFence | undefined;
  private abort: AbortController | undefined;
  private running: Promise<void> | undefined;
  /** The actor's child logger (log), made on first use: most rows' work never logs here, and a pino child serializes
   * and redacts its bindings when made (issue 16). */
  private actorLog: Logger | undefined;

  constructor(
    private readonly table: LeasedTable,
    private readonly ls: LeasedRowSettings,
    private readonly labels: LeasedRowLabels,
    protected readonly actor: ActorHandle<LeasedRowMessage>,
  ) {
  }

  protected get log(): Logger {
    return (this.actorLog ??= this.ls.logger.child({ actor: this.actor.kind, [this.labels.logKey]: this.actor.key }));
  }

  /** Runs the row's work to its end; rejects with a hand-over error (isHandOver) when the row stops being ours. */
  protected abstract run(claim: RowClaim<R>, signal: AbortSignal): Promise<void>;

  /** Called once the actor has left the runtime after its work ended (a kind that parks checks for a late wake). */
  protected ended(): void {}

  /** Takes the claim the actor runs under. Always a new claim here; a kind whose rows arrive claimed overrides it. */
  protected claim(): Promise<RowClaim<R> | null> {
    return claimLeasedRow<R>(this.ls.db, this.table, this.actor.key, this.ls.nodeId, this.ls.leaseMs);
  }

  async recover(): Promise<void> {
    const claim = await this.claim();
    if (!claim || !this.table.activeStatuses.includes(claim.row.status)) {
      this.actor.stop();
      return;
    }
    this.fence = claim;
    const abort = new AbortController();
    this.abort = abort;
    if (claim.row.cancel_requested) abort.abort(new CancelledByUser());
    if (this.ls.renewer) {
      // The renewer calls back outside this actor's turn; the messages bring its news into the mailbox.
      this.ls.renewer.hold(claim, {
        renewed: (row) => {
          if (row.cancel_requested === true) this.actor.schedule(0, { type: 'renewed', cancelRequested: true });
        },
        lost: (error) => this.actor.schedule(0, { type: 'lease_lost', error }),
      });
    } else this.actor.schedule(this.ls.leaseMs / 3, { type: 'renew' });
    this.running = this.run(claim, abort.signal).then(
      () => this.actor.schedule(0, { type: 'ended' }),
      (error: Error) => {
        if (error instanceof Passivated) {
          // Parked on its row (the work released the claim's renewal itself): leave memory without a word.
          this.actor.schedule(0, { type: 'ended' });
          return;
        }
        if (isHandOver(error)) {
          this.log.info({ reason: error.message }, `${this.labels.run} handed over`);
          // The row belongs to another node: leave the runtime, so that a later recovery here can spawn the actor
          // again (a live entry would keep it out). On shutdown the runtime stops the actor itself.
          if (!(error instanceof NodeShuttingDown)) this.actor.schedule(0, { type: 'ended' });
          return;
        }
        this.actor.schedule(0, { type: 'crashed', error });
      },
    );
  }

  async handle(msg: LeasedRowMessage): Promise<void> {
    switch (msg.type) {
      case 'cancel':
        this.abort?.abort(new CancelledByUser());
        msg.reply?.(this.abort !== undefined);
        return;
      case 'renew': {
        if (!this.fence) return;
        try {
          const renewed = await renewRow<R>(this.ls.db, this.fence, this.ls.leaseMs);
          this.cancelAskedElsewhere(renewed.row.cancel_requested);
        } catch (err) {
          this.lost(err);
          return;
        }
        this.actor.schedule(this.ls.leaseMs / 3, { type: 'renew' });
        return;
      }
      case 'renewed':
        this.cancelAskedElsewhere(msg.cancelRequested);
        return;
      case 'lease_lost':
        if (this.fence) this.lost(msg.error);
        return;
      case 'ended':
        if (this.fence) this.ls.renewer?.release(this.fence);
        this.fence = undefined;
        this.actor.stop();
        this.ended();
        return;
      case 'crashed':
        // Thrown inside the actor so that the supervisor recovers it from its row with a new claim (held anew), or
        // gives up after repeats: this claim is done either way.
        if (this.fence) this.ls.renewer?.release(this.fence);
        throw msg.error;
    }
  }

  async shutdown(): Promise<void> {
    const fence = this.fence;
    this.abort?.abort(new NodeShuttingDown());
    // Let the work stop (kill its sandbox, say) before the stores close; bounded, so a stuck one cannot hang the stop.
    // The bound's timer is cleared once the work stopped: left pending, it held the process up to 5 s after the stop.
    if (this.running) {
      let bound: NodeJS.Timeout | undefined;
      await Promise.race([this.running, new Promise((r) => (bound = setTimeout(r, 5000)))]);
      clearTimeout(bound);
    }
    this.fence = undefined;
    if (fence) {
      this.ls.renewer?.release(fence);
      // Give the row up so the next start (or another node) resumes it without waiting for the lease to expire.
      await releaseRow(this.ls.db, fence).catch(() => undefined);
    }
  }

  /** A cancel asked on another node (which cannot reach this actor) is seen in the renewed row. */
  private cancelAskedElsewhere(cancelRequested: boolean): void {
    if (cancelRequested && this.abort && !this.abort.signal.aborted) this.abort.abort(new CancelledByUser());
  }

  /** The actor that lost its lease stops: its work is aborted with the loss, and it never renews or releases again. */
  private lost(err: unknown): void {
    this.log.warn({ err }, `lost the ${this.labels.lease} lease; stopping here`);
    this.abort?.abort(err);
    this.fence = undefined;
  }
}
