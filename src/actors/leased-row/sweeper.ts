// The sweep of lapsed leases (issue 20): a row whose claim expired — its node was killed, frozen, cut off from the
// database, or its actor gave up while the database was down — is picked up by whichever live node sees it, within a
// sweep interval of the lapse, not at the next restart. Each source says which lapsed rows of one actor kind this node
// may drive (that depends on the topology: a hybrid resumes any non-worker's executions itself, a worker only its
// own, a controller re-routes a dead controller's); the sweep spawns an actor for each one not running here, and the
// actor's own claim (a new epoch) fences off whoever held the row before.
import type { Logger } from '../../logging/logger.ts';
import type { ActorRuntime } from '../runtime.ts';

export interface LapsedSource {
  /** The actor kind that drives the rows. */
  kind: string;
  /** Keys of the lapsed rows this node should drive; `live` are the keys it already runs actors for. */
  lapsed(live: readonly string[]): Promise<string[]>;
}

export interface LapsedSweep {
  /** One pass over every source; answers how many actors it spawned. Exported for tests. */
  sweep(): Promise<number>;
  stop(): void;
}

/**
 * The sweep interval for a lease: a sixth of it, between 250 ms and 2 s, so that a lapsed row is picked up well
 * within one lease period after it lapsed (one indexed query per source and interval; the non-terminal rows only).
 */
export function sweepIntervalFor(leaseMs: number): number {
  return Math.min(2000, Math.max(250, Math.round(leaseMs / 6)));
}

export function startLapsedSweep(o: { actors: ActorRuntime; sources: LapsedSource[]; intervalMs: number; logger: Logger }): LapsedSweep {
  const log = o.logger.child({ component: 'lapsed-sweep' });
  let running = false;
  const sweep = async (): Promise<number> => {
    let spawned = 0;
    for (const s of o.sources) {
      const live = o.actors.liveKeys(s.kind);
      const liveSet = new Set(live);
      for (const key of await s.lapsed(live)) {
        if (liveSet.has(key) || o.actors.isLive(s.kind, key)) continue;
        o.actors.spawn(s.kind, key);
        spawned++;
      }
    }
    if (spawned > 0) log.info({ spawned }, 'picked up rows whose lease lapsed');
    return spawned;
  };
  const timer = setInterval(() => {
    // One pass at a time: a slow database must not pile sweeps up.
    if (running) return;
    running = true;
    sweep()
      .catch((err: unknown) => log.warn({ err }, 'lapsed-lease sweep failed'))
      .finally(() => (running = false));
  }, o.intervalMs);
  timer.unref();
  return { sweep, stop: () => clearInterval(timer) };
}
