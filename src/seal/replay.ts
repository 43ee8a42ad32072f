// The SEAL replay record, shared by every node: an envelope's signature may be used once per session. With Redis
// configured it is one `SET orch:seal:seen:<session>:<sha256(signature)> 1 NX PX 60000` per invoke (~0.04 ms
// here, against 0.15–0.6 ms for a database insert on PGlite): NX makes the first writer win on any node, and the
// key expires 60 s later, past the ±30 s timestamp window, after which the envelope is refused as stale anyway.
// Without Redis the database statement in SealService keeps the record (seal_seen_signatures).
import { Redis } from 'ioredis';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';

/** Outlives the ±30 s window (CONTRACT.md), so an expired record can only belong to an envelope already stale. */
export const REPLAY_TTL_MS = 60_000;
export const REPLAY_KEY_PREFIX = 'orch:seal:seen:';

export interface ReplayGuard {
  /** true the first time (session, signature hash) is seen by any node; false for a replay. */
  firstUse(sessionId: string, signatureHash: string): Promise<boolean>;
  close(): Promise<void>;
}

export class RedisReplayGuard implements ReplayGuard {
  private constructor(private readonly redis: Redis) {}

  /** Connects (fails with UNAVAILABLE when Redis does not answer). */
  static async open(url: string, logger?: Logger): Promise<RedisReplayGuard> {
    // enableOfflineQueue false: a lost connection fails the invoke (500) at once instead of queueing — a replay
    // check that cannot be made must not pass.
    // enableAutoPipelining: the checks of one event-loop turn go out in one write (a controller absorbing a thousand
    // heartbeats a second makes one SET NX each).
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false, enableAutoPipelining: true });
    redis.on('error', (err: Error) => logger?.warn({ err, role: 'seal-replay' }, 'redis connection error'));
    try {
      await redis.connect();
    } catch (err) {
      redis.disconnect();
      throw new OrchError(Errors.UNAVAILABLE, `cannot connect to Redis: ${(err as Error).message}`, { cause: err });
    }
    return new RedisReplayGuard(redis);
  }

  async firstUse(sessionId: string, signatureHash: string): Promise<boolean> {
    const r = await this.redis.set(`${REPLAY_KEY_PREFIX}${sessionId}:${signatureHash}`, '1', 'PX', REPLAY_TTL_MS, 'NX');
    return r === 'OK';
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
