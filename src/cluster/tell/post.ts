// ActorPost: tell(kind, key, message) from any node (docs/CLUSTER.md "Messages to actors"). The row's lease says
// who holds the actor: this node → delivered in-process; another node → TellActor on its NodeClusterService, sealed
// with this node's own token and key (as PushConfig and ForwardExecution are). The fact was committed before the call,
// so the message is only a wake-up: when the holder cannot be reached or answers that it no longer holds the actor,
// the lease is read again and the message follows the new holder, with a capped backoff, for a short window; past it
// (or when nobody holds the row) the fact is read by whoever recovers the row next, or by the slow poll.
// Delivery is at-least-once: a call that outlives its timeout is sent again though the holder may have had it, which
// is harmless because a message never carries the fact, only the cue to re-read the row (a cancel's request is
// committed first too, so a second cancel finds it already handled).
import type { Logger } from '../../logging/logger.ts';
import type { Queryable } from '../../storage/db.ts';
import type { Holder, LocalDelivery, Teller, TellKind, TellMessage, TellOutcome } from '../../actors/tell.ts';
import { holderFrom, holderSubquery, type HolderColumns } from '../../actors/holder.ts';
import { backoffDelay, type BackoffPolicy } from '../../util/backoff.ts';
import { NodeClusterClient, type CallCredentials } from '../client.ts';

export type { Holder };

/** Reads the row's claim and the holder's address in one statement. */
export async function holderOf(db: Queryable, kind: TellKind, key: string): Promise<Holder> {
  const res = await db.query<HolderColumns>(holderSubquery(kind, '$1'), [key]);
  return holderFrom(res.rows[0]);
}

export interface ActorPostOptions {
  db: Queryable;
  nodeId: string;
  logger: Logger;
  /** This node's own token and key for calls to other nodes; absent: remote holders are not told (the poll reads). */
  credentials?: () => Promise<CallCredentials>;
  /** How long a message follows an unreachable or moving holder (default 5 s). */
  retryForMs?: number;
  /** The backoff between attempts (default 25 ms doubling to 500 ms). */
  backoff?: BackoffPolicy;
  /** Per call (default 2 s): a holder that does not answer in that long is tried again. */
  callTimeoutMs?: number;
  /**
   * A client to a peer not told anything for this long is closed (default 10 min). Peers come and go (workers
   * replaced, addresses of restarted nodes): without it a long-lived controller kept a channel per address it ever
   * told, for good.
   */
  clientIdleMs?: number;
  /** The clock the idle clients are judged by (default Date.now; tests step it, so load cannot move the verdict). */
  clock?: () => number;
}

export const TELL_BACKOFF: BackoffPolicy = { baseMs: 25, capMs: 500 };

function isUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  // UNAVAILABLE (14), DEADLINE_EXCEEDED (4), CANCELLED (1), or a socket error before any answer.
  return code === 14 || code === 4 || code === 1 || typeof code === 'string';
}

export class ActorPost implements Teller {
  private readonly local = new Map<TellKind, LocalDelivery>();
  private readonly clients = new Map<string, { client: NodeClusterClient; usedAt: number }>();
  private sweptAt = 0;
  private credentials: (() => Promise<CallCredentials>) | undefined;
  private readonly log: Logger;
  private closed = false;

  constructor(private readonly o: ActorPostOptions) {
    this.credentials = o.credentials;
    this.log = o.logger.child({ component: 'actor-post' });
  }

  /** The in-process delivery of a kind on this node (the workflow engine's wakers, the execution actors). */
  register(kind: TellKind, deliver: LocalDelivery): void {
    this.local.set(kind, deliver);
  }

  /** Set once the node has its cluster identity (the post is made before the cluster capability). */
  setCredentials(credentials: () => Promise<CallCredentials>): void {
    this.credentials = credentials;
  }

  async tell(kind: TellKind, key: string, msg: TellMessage, holder?: Holder): Promise<TellOutcome> {
    try {
      return await this.deliver(kind, key, msg, holder);
    } catch (err) {
      this.log.warn({ err, kind, key, message: msg.type }, 'message to an actor not delivered; its row is read at recovery or by the poll');
      return 'undelivered';
    }
  }

  /** The receiving side (TellActor, and this node's own tells): deliver when this node holds the actor. */
  async receive(kind: TellKind, key: string, msg: TellMessage): Promise<boolean> {
    const deliver = this.local.get(kind);
    return deliver ? deliver(key, msg) : false;
  }

  private async deliver(kind: TellKind, key: string, msg: TellMessage, known?: Holder): Promise<TellOutcome> {
    const deadline = Date.now() + (this.o.retryForMs ?? 5_000);
    for (let attempt = 1; ; attempt++) {
      let outcome: TellOutcome | 'retry';
      try {
        // The first attempt goes where the fact's own statement saw the holder (if it read it); retries read again.
        outcome = await this.once(kind, key, msg, attempt === 1 ? known : undefined);
      } catch (err) {
        // A database that does not answer is waited out like an unreachable holder, inside the same window.
        this.log.debug({ err, kind, key }, 'message to an actor: attempt failed');
        outcome = 'retry';
      }
      if (outcome !== 'retry') return outcome;
      const delay = backoffDelay(attempt, this.o.backoff ?? TELL_BACKOFF);
      if (this.closed || Date.now() + delay > deadline) {
        this.log.info({ kind, key, message: msg.type, attempts: attempt }, 'message to an actor not delivered in its window; its row is read at recovery or by the poll');
        return 'undelivered';
      }
      await new Promise((r) => setTimeout(r, delay).unref());
    }
  }

  private async once(kind: TellKind, key: string, msg: TellMessage, known?: Holder): Promise<TellOutcome | 'retry'> {
    const holder = known ?? (await holderOf(this.o.db, kind, key));
    if (holder.gone) return 'gone';
    if (!holder.nodeId) return 'unheld';
    if (holder.nodeId === this.o.nodeId) return (await this.receive(kind, key, msg)) ? 'local' : 'retry';
    if (!holder.address || !this.credentials) {
      // A node that advertises no cluster address (started before migration 065) or a node without a cluster
      // identity cannot be told: its poll reads the fact.
      this.log.debug({ kind, key, holder: holder.nodeId }, 'holder cannot be told; leaving it to the poll');
      return 'undelivered';
    }
    try {
      const res = await this.client(holder.address).tellActor({ kind, key, message: msg.type, topic: msg.type === 'wake' ? (msg.topic ?? '') : '' }, await this.credentials());
      return res.delivered ? 'remote' : 'retry';
    } catch (err) {
      if (isUnavailable(err)) return 'retry';
      // A refusal (bad credentials, a node that does not serve TellActor) will not change by retrying.
      this.log.warn({ err, kind, key, holder: holder.nodeId }, 'TellActor refused');
      return 'undelivered';
    }
  }

  private client(address: string): NodeClusterClient {
    const now = (this.o.clock ?? Date.now)();
    this.closeIdle(now);
    let c = this.clients.get(address);
    if (!c) {
      c = { client: new NodeClusterClient(address, this.o.callTimeoutMs ?? 2_000), usedAt: now };
      this.clients.set(address, c);
    }
    c.usedAt = now;
    return c.client;
  }

  /** Closes the clients not used for clientIdleMs; looks at most once per tenth of that. */
  private closeIdle(now: number): void {
    const idleMs = this.o.clientIdleMs ?? 10 * 60_000;
    if (now - this.sweptAt < idleMs / 10) return;
    this.sweptAt = now;
    for (const [address, c] of this.clients) {
      if (now - c.usedAt <= idleMs) continue;
      c.client.close();
      this.clients.delete(address);
    }
  }

  /** Peers this post holds a client to (metrics, tests). */
  openClients(): number {
    return this.clients.size;
  }

  close(): void {
    this.closed = true;
    for (const c of this.clients.values()) c.client.close();
    this.clients.clear();
  }
}
