// PeerWatch: the controller's heartbeat-deadline clock for every remote peer it owns (docs/CLUSTER.md). One tick
// costs one statement whatever the number of peers (repo.watchTick): renew the claims this controller holds, find
// the overdue peers and tell their NodePeerActors (which make the fenced UNHEALTHY transition), release rows that
// were deregistered, and — every few ticks — spawn actors for rows nobody holds (new members registered on a controller
// that died, or claims that expired), stop actors over rows another node took, and keep this node's own row driven.
import type { Logger } from '../../logging/logger.ts';
import type { Db } from '../../storage/db.ts';
import type { ActorRuntime } from '../runtime.ts';
import { NODE_PEER_KIND } from './actor.ts';
import * as repo from './repo.ts';

export interface PeerWatchOptions {
  db: Db;
  actors: ActorRuntime;
  selfId: string;
  heartbeatMs: number;
  missedHeartbeats: number;
  /** Default: half a heartbeat period, so a dead peer is seen within `missed + 0.5` periods. */
  tickMs?: number;
  logger: Logger;
}

export class PeerWatch {
  private timer: NodeJS.Timeout | undefined;
  private ticks = 0;
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly log: Logger;

  constructor(private readonly o: PeerWatchOptions) {
    this.log = o.logger.child({ component: 'peer-watch' });
  }

  private get tickMs(): number {
    return this.o.tickMs ?? Math.max(50, Math.round(this.o.heartbeatMs / 2));
  }

  start(): this {
    const loop = (): void => {
      if (this.stopped) return;
      this.running = this.tick()
        .catch((err: unknown) => this.log.warn({ err }, 'peer watch tick failed'))
        .finally(() => {
          if (!this.stopped) {
            this.timer = setTimeout(loop, this.tickMs);
            this.timer.unref();
          }
        });
    };
    this.timer = setTimeout(loop, 0);
    this.timer.unref();
    return this;
  }

  /** One pass; exported for tests that drive it by hand. */
  async tick(): Promise<void> {
    const { db, actors, selfId } = this.o;
    const ttl = this.o.heartbeatMs * (this.o.missedHeartbeats + 1);
    const { overdue, released } = await repo.watchTick(db, selfId, ttl, this.o.heartbeatMs * this.o.missedHeartbeats);
    for (const id of overdue) {
      if (!actors.tell(NODE_PEER_KIND, id, { type: 'overdue' })) actors.spawn(NODE_PEER_KIND, id);
    }
    for (const id of released) actors.tell(NODE_PEER_KIND, id, { type: 'released' });
    if (this.ticks++ % 4 === 0) await this.adopt();
  }

  /**
   * Spawns actors for rows nobody holds (or whose claim lapsed), re-claims lapsed rows whose actor here still runs
   * (its claim expired while this node was frozen or cut off), stops actors over rows another node holds now, and
   * keeps this node's own row driven: its actor is spawned again whatever stopped it (a give-up after repeated
   * crashes, say), and takes the row back from whoever holds it.
   */
  private async adopt(): Promise<void> {
    const { db, actors, selfId } = this.o;
    const rows = await repo.watchableNodes(db, selfId);
    const seen = new Set<string>();
    for (const r of rows) {
      seen.add(r.node_id);
      if (!actors.isLive(NODE_PEER_KIND, r.node_id)) actors.spawn(NODE_PEER_KIND, r.node_id);
      else if (r.node_id !== selfId && r.owner_node !== selfId) actors.tell(NODE_PEER_KIND, r.node_id, { type: 'reclaim' });
    }
    for (const id of actors.liveKeys(NODE_PEER_KIND)) {
      if (id !== selfId && !seen.has(id)) actors.tell(NODE_PEER_KIND, id, { type: 'released' });
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
