// NodePeerActor: one per cluster member, on the node that owns the member's row. For the node's own row it
// heartbeats (count, time, load); for a remote peer it holds the fenced claim on the row and makes the status
// transitions the heartbeat deadline calls for: the controller's PeerWatch (./watch.ts) renews every claim and finds
// overdue peers with one statement per tick, and tells their actors, which mark them UNHEALTHY (with the event) under
// their fence. Heartbeats themselves (and UNHEALTHY → ACTIVE) are written by whichever controller receives them
// (src/cluster/membership.ts). Everything it knows is in cluster_nodes, so a restart resumes from the row.
import os from 'node:os';
import { isOrchError, Errors } from '../../errors/catalog.ts';
import type { Logger } from '../../logging/logger.ts';
import type { EventBus } from '../../bus/bus.ts';
import type { Db } from '../../storage/db.ts';
import { appendEvent } from '../../storage/event-log.ts';
import type { ActorHandle, ActorKind, ActorMessage, Behaviour } from '../kind.ts';
import * as repo from './repo.ts';

export const NODE_PEER_KIND = 'node-peer';

export interface NodePeerSettings {
  db: Db;
  bus: EventBus;
  /** This node's id: owner of the rows it claims. */
  selfId: string;
  heartbeatMs: number;
  /** Missed heartbeats after which a remote peer is UNHEALTHY. */
  missedHeartbeats: number;
  /** Reports the work this node carries, written with each heartbeat. */
  load?: () => Record<string, unknown>;
  logger: Logger;
}

export type NodePeerMessage = ActorMessage &
  (
    | { type: 'tick' }
    | { type: 'overdue' }
    | { type: 'released' }
    /** From the watch: this actor's claim on a remote peer's row lapsed (or the row was let go): claim it again. */
    | { type: 'reclaim' }
    | { type: 'status'; reply: (row: repo.NodeRow | null) => void }
  );

/** The stream each node's lifecycle events are recorded and announced on. */
export function nodeStream(nodeId: string): string {
  return `node:${nodeId}`;
}

export function defaultLoad(): Record<string, unknown> {
  const [one] = os.loadavg();
  return { cpu_load_1m: one ?? 0, memory_utilization_percent: Math.round((1 - os.freemem() / os.totalmem()) * 100) };
}

class NodePeerBehaviour implements Behaviour<NodePeerMessage> {
  private fence: repo.Fence | undefined;
  private readonly log: Logger;

  constructor(
    private readonly s: NodePeerSettings,
    private readonly actor: ActorHandle<NodePeerMessage>,
  ) {
    this.log = s.logger.child({ actor: NODE_PEER_KIND, node: actor.key });
  }

  private get isSelf(): boolean {
    return this.actor.key === this.s.selfId;
  }

  private get leaseTtlMs(): number {
    return this.s.heartbeatMs * (this.s.missedHeartbeats + 1);
  }

  async recover(): Promise<void> {
    if (!(await this.claim())) {
      this.log.info('row is claimed by another live node; not running it here');
      this.actor.stop();
      return;
    }
    // Our own row heartbeats on a timer; a remote peer's deadline is checked once now, then on the watch's word.
    this.actor.schedule(0, { type: this.isSelf ? 'tick' : 'overdue' });
  }

  /**
   * Takes the row with a new epoch (fencing off whoever held it) and records `recovered`; false when another live
   * node holds it. A node always gets its own row (claimNode), whoever took it over while it was down or frozen.
   */
  private async claim(): Promise<boolean> {
    const nodeId = this.actor.key;
    const claimed = await this.s.db.tx(async (tx) => {
      const row = await repo.claimNode(tx, nodeId, this.s.selfId, this.leaseTtlMs);
      if (!row) return null;
      const event = await appendEvent(tx, nodeStream(nodeId), 'recovered', {
        node_id: nodeId,
        owner: this.s.selfId,
        epoch: row.epoch,
        status: row.status,
        heartbeat_count: row.heartbeat_count,
      });
      return { row, event };
    });
    if (!claimed) {
      this.fence = undefined;
      return false;
    }
    this.fence = { nodeId, owner: this.s.selfId, epoch: claimed.row.epoch };
    await this.s.bus.publish(claimed.event).catch((err: unknown) => this.log.warn({ err }, 'publishing recovered failed'));
    this.log.info({ epoch: claimed.row.epoch, status: claimed.row.status }, 'node peer recovered');
    return true;
  }

  async handle(msg: NodePeerMessage): Promise<void> {
    switch (msg.type) {
      case 'tick':
        await this.tick();
        return;
      case 'overdue':
        await this.fenced(() => this.markIfOverdue());
        return;
      case 'released':
        // The watch released the claim on a DEREGISTERED row, or another node holds the row now: nothing to watch.
        this.fence = undefined;
        this.actor.stop();
        return;
      case 'reclaim':
        if (this.isSelf) return;
        // The watch judged from a row it read earlier: this actor may have claimed the row since (its recovery and
        // the watch's first pass race at start). A claim still held under our epoch is only extended: a new epoch
        // (and a `recovered` event) is for a row someone else held or let go.
        if (await this.stillHeld()) return;
        if (await this.claim()) await this.fenced(() => this.markIfOverdue());
        else this.actor.stop();
        return;
      case 'status':
        msg.reply(await repo.getNode(this.s.db, this.actor.key));
        return;
    }
  }

  /** Extends this actor's claim when the row is still ours under its epoch; false when it is not (or never was). */
  private async stillHeld(): Promise<boolean> {
    const fence = this.fence;
    if (!fence) return false;
    try {
      await repo.renewClaim(this.s.db, fence, this.leaseTtlMs);
      return true;
    } catch (err) {
      if (isOrchError(err) && err.spec === Errors.LEASE_LOST) return false;
      throw err;
    }
  }

  /** Runs a fenced step; a lost lease stops the actor instead of crashing it. */
  private async fenced(step: () => Promise<void>): Promise<boolean> {
    try {
      await step();
      return true;
    } catch (err) {
      if (isOrchError(err) && err.spec === Errors.LEASE_LOST) {
        this.log.warn('lease lost; stopping this actor');
        this.fence = undefined;
        this.actor.stop();
        return false;
      }
      throw err;
    }
  }

  /** A remote peer past its deadline (ACTIVE or DRAINING) becomes UNHEALTHY, with its event, in one transaction. */
  private async markIfOverdue(): Promise<void> {
    const fence = this.fence;
    if (!fence || this.isSelf) return;
    const overdueMs = this.s.heartbeatMs * this.s.missedHeartbeats;
    const event = await this.s.db.tx(async (tx) => {
      const previous = await repo.markUnhealthyIfOverdue(tx, fence, overdueMs);
      if (!previous) return null;
      return appendEvent(tx, nodeStream(fence.nodeId), 'status_changed', { node_id: fence.nodeId, status: 'UNHEALTHY', previous });
    });
    if (event) {
      this.log.warn('peer missed its heartbeats; UNHEALTHY');
      await this.s.bus.publish(event);
    }
  }

  private async tick(): Promise<void> {
    const fence = this.fence;
    if (!fence) return;
    try {
      const row = await repo.heartbeatSelf(this.s.db, fence, this.leaseTtlMs, (this.s.load ?? defaultLoad)());
      if (row.status === 'UNHEALTHY') await this.backToActive(fence);
    } catch (err) {
      if (!(isOrchError(err) && err.spec === Errors.LEASE_LOST)) throw err;
      // A peer took our row while we could not heartbeat (frozen, cut off from the database, an actor that gave
      // up) and may have marked us UNHEALTHY. We are alive: take it back at once (a new epoch fences the peer's
      // claim off) instead of leaving the row to the peer for good.
      this.log.warn('own membership row was taken over by another node; taking it back');
      if (!(await this.claim())) {
        // Only a DEREGISTERED row refuses its own node; the watch tries again later.
        this.actor.stop();
        return;
      }
      this.actor.schedule(0, { type: 'tick' });
      return;
    }
    this.actor.schedule(this.s.heartbeatMs, { type: 'tick' });
  }

  /** Our row was UNHEALTHY (a peer marked it while we were silent): ACTIVE again, with its event. */
  private async backToActive(fence: repo.Fence): Promise<void> {
    const event = await this.s.db.tx(async (tx) => {
      const previous = await repo.activateSelf(tx, fence);
      if (!previous) return null;
      return appendEvent(tx, nodeStream(fence.nodeId), 'status_changed', { node_id: fence.nodeId, status: 'ACTIVE', previous });
    });
    if (event) {
      this.log.info('own membership row is ACTIVE again');
      await this.s.bus.publish(event).catch((err: unknown) => this.log.warn({ err }, 'publishing status_changed failed'));
    }
  }

  async shutdown(): Promise<void> {
    const fence = this.fence;
    if (!fence) return;
    this.fence = undefined;
    const event = await this.s.db.tx(async (tx) => {
      if (this.isSelf) await repo.setStatus(tx, fence, 'DEREGISTERED');
      await repo.releaseClaim(tx, fence);
      return this.isSelf ? appendEvent(tx, nodeStream(fence.nodeId), 'deregistered', { node_id: fence.nodeId }) : null;
    });
    if (event) await this.s.bus.publish(event);
  }
}

export function nodePeerKind(settings: NodePeerSettings): ActorKind<NodePeerMessage> {
  return {
    name: NODE_PEER_KIND,
    recoverableKeys: () => repo.recoverableNodeIds(settings.db, settings.selfId),
    create: (handle) => new NodePeerBehaviour(settings, handle),
    giveUp: async (key, reason) => {
      // A peer whose actor keeps crashing cannot be watched: say so on its row rather than leave it ACTIVE.
      await settings.db.query(
        `UPDATE cluster_nodes SET status = 'UNHEALTHY', updated_at = now() WHERE node_id = $1 AND status <> 'DEREGISTERED'`,
        [key],
      );
      settings.logger.error({ node: key, reason }, 'node peer actor gave up');
    },
  };
}
