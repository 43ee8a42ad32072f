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
import type { LocalDelivery, Teller, TellKind, TellMessage, TellOutcome } from '../../actors/tell.ts';
import { backoffDelay, type BackoffPolicy } from '../../util/backoff.ts';
import { NodeClusterClient, type CallCredentials } from '../client.ts';

/** Where a row's actor lives now: its claim and the holder's cluster address. */
export interface Holder {
  /** The row is missing or terminal. */
  gone: boolean;
  /** The node whose claim is live; undefined when the claim lapsed or nobody holds it. */
  nodeId?: string;
  /** Its NodeClusterService address (a worker's grpc_address, a controller's cluster_address). */
  address?: string;
}

const TABLES: Record<TellKind, { table: string; active: string }> = {
  workflow: { table: 'workflow_executions', active: `('running', 'waiting_for_human_input')` },
  execution: { table: 'executions', active: `('pending', 'running')` },
};

/** Reads the row's claim and the holder's address in one statement. */
export async function holderOf(db: Queryable, kind: TellKind, key: string): Promise<Holder> {
  const t = TABLES[kind];
  // A parked workflow run (no actor in memory, no lease of its own) is held by its node while that node's parking
  // lease holds: the message goes there and brings it back (src/workflow/engine/parking.ts).
  const live = kind === 'workflow'
    ? `CASE WHEN r.parked THEN (SELECT p.expires_at > now() FROM workflow_parking_leases p WHERE p.node_id = r.owner_node)
       ELSE r.lease_expires_at > now() END`
    : 'r.lease_expires_at > now()';
  // The holder's address by primary key in a scalar subquery: never a join that may read every member row.
  const res = await db.query<{ active: boolean; owner_node: string | null; live: boolean | null; address: string | null }>(
    `SELECT r.status IN ${t.active} AS active, r.owner_node, ${live} AS live,
       (SELECT CASE WHEN n.role = 'worker' THEN n.grpc_address ELSE n.cluster_address END FROM cluster_nodes n WHERE n.node_id = r.owner_node) AS address
     FROM ${t.table} r WHERE r.id = $1`,
    [key],
  );
  const r = res.rows[0];
  if (!r || !r.active) return { gone: true };
  if (!r.owner_node || r.live !== true) return { gone: false };
  const address = r.address;
  return { gone: false, nodeId: r.owner_node, ...(address ? { address } : {}) };
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
}

export const TELL_BACKOFF: BackoffPolicy = { baseMs: 25, capMs: 500 };

function isUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  // UNAVAILABLE (14), DEADLINE_EXCEEDED (4), CANCELLED (1), or a socket error before any answer.
  return code === 14 || code === 4 || code === 1 || typeof code === 'string';
}

export class ActorPost implements Teller {
  private readonly local = new Map<TellKind, LocalDelivery>();
  private readonly clients = new Map<string, NodeClusterClient>();
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

  async tell(kind: TellKind, key: string, msg: TellMessage): Promise<TellOutcome> {
    try {
      return await this.deliver(kind, key, msg);
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

  private async deliver(kind: TellKind, key: string, msg: TellMessage): Promise<TellOutcome> {
    const deadline = Date.now() + (this.o.retryForMs ?? 5_000);
    for (let attempt = 1; ; attempt++) {
      let outcome: TellOutcome | 'retry';
      try {
        outcome = await this.once(kind, key, msg);
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

  private async once(kind: TellKind, key: string, msg: TellMessage): Promise<TellOutcome | 'retry'> {
    const holder = await holderOf(this.o.db, kind, key);
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
    let c = this.clients.get(address);
    if (!c) {
      c = new NodeClusterClient(address, this.o.callTimeoutMs ?? 2_000);
      this.clients.set(address, c);
    }
    return c;
  }

  close(): void {
    this.closed = true;
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}
