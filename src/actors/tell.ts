// A message to an actor from any node (DESIGN.md rule 5; docs/CLUSTER.md "Messages to actors"). The caller commits
// the fact first (an approval row, a signal, cancel_requested, a child run's end); the message only wakes the actor
// that waits on it, wherever its lease is held. The interface lives here so that capability modules (workflow,
// agents) can be handed one without importing the cluster: src/cluster/tell/post.ts is the implementation.


/** Actors a message can address: a workflow run or an agent execution, keyed by its row id. */
export type TellKind = 'workflow' | 'execution';

/**
 * `wake`: re-read what you wait for (`topic` names it: empty for the run's own approval or signal,
 * `terminal:<run id>` for a child run, `execution:<id>` for an Agent state's execution).
 * `cancel`: re-read cancel_requested and stop if it is set.
 */
export type TellMessage = { type: 'wake'; topic?: string } | { type: 'cancel' };

/**
 * How a tell ended. `local` / `remote`: the holder took it. `unheld`: no live claim on the row (its next holder reads
 * the fact when it recovers the row). `gone`: no such row, or it is terminal. `undelivered`: the holder could not be
 * reached, or kept refusing, until the retry window closed (the slow poll or the next holder's recovery reads it).
 */
export type TellOutcome = 'local' | 'remote' | 'unheld' | 'gone' | 'undelivered';

/** Where a row's actor lives now: its claim and the holder's cluster address. */
export interface Holder {
  /** The row is missing or terminal. */
  gone: boolean;
  /** The node whose claim is live; undefined when the claim lapsed or nobody holds it. */
  nodeId?: string;
  /** Its NodeClusterService address (a worker's grpc_address, a controller's cluster_address). */
  address?: string;
}

export interface Teller {
  /**
   * Delivers in the background; never rejects. `holder`: where the statement that committed the fact saw the actor
   * held (actors/holder.ts), which spares the first attempt its own read.
   */
  tell(kind: TellKind, key: string, msg: TellMessage, holder?: Holder): Promise<TellOutcome>;
}

/** Delivers on this node, when it holds (kind, key): answers false when it does not (no live actor here). */
export type LocalDelivery = (key: string, msg: TellMessage) => Promise<boolean>;

/** A Teller that also takes this node's in-process deliveries (src/cluster/tell/post.ts ActorPost). */
export interface Post extends Teller {
  register(kind: TellKind, deliver: LocalDelivery): void;
}

/**
 * A node without a cluster post (tests of one capability, PGlite nodes): delivers only in-process, to an actor
 * live here; anything else is read by the poll or at recovery.
 */
export class LocalPost implements Post {
  private readonly local = new Map<TellKind, LocalDelivery>();

  register(kind: TellKind, deliver: LocalDelivery): void {
    this.local.set(kind, deliver);
  }

  async tell(kind: TellKind, key: string, msg: TellMessage): Promise<TellOutcome> {
    const deliver = this.local.get(kind);
    try {
      return deliver && (await deliver(key, msg)) ? 'local' : 'unheld';
    } catch {
      return 'undelivered';
    }
  }
}
