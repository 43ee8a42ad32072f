// The SEAL replay record, shared by every node: an envelope's signature may be used once per session. With Redis
// configured it is one `SET orch:seal:seen:<session>:<sha256(signature bytes)> 1 NX PX <ttl>` per invoke (~0.04 ms
// here, against 0.15–0.6 ms for a database insert on PGlite): NX makes the first writer win on any node. The SEAL
// timestamp is not signed (the signature covers the payload only), so a captured envelope with a fresh timestamp
// stays usable for as long as its session is: SealService passes the session's remaining lifetime as the ttl, never
// a fixed window (issue 14: a 60 s record let the same envelope through again 62 s later). The cluster's nonce
// record (src/cluster/capability.ts) keeps the 60 s default: its freshness stamp is signed.
// Without Redis the database statement in SealService keeps the record (seal_seen_signatures).
import { trackRedis } from '../observability/clients.ts';
import { Redis } from 'ioredis';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';

/** For records of signed freshness stamps (cluster envelopes): outlives the ±30 s window, so an expired record can
 * only belong to an envelope already stale. SEAL signatures pass their session's lifetime instead. */
export const REPLAY_TTL_MS = 60_000;
export const REPLAY_KEY_PREFIX = 'orch:seal:seen:';

export interface ReplayGuard {
  /** true the first time (session, signature hash) is seen by any node; false for a replay. The record is kept
   * for `ttlMs` (default REPLAY_TTL_MS). */
  firstUse(sessionId: string, signatureHash: string, ttlMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

export class RedisReplayGuard implements ReplayGuard {
  private readonly untrack: () => void;

  private constructor(private readonly redis: Redis) {
    this.untrack = trackRedis(redis, 'seal-replay');
  }

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

  async firstUse(sessionId: string, signatureHash: string, ttlMs = REPLAY_TTL_MS): Promise<boolean> {
    const r = await this.redis.set(`${REPLAY_KEY_PREFIX}${sessionId}:${signatureHash}`, '1', 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX');
    return r === 'OK';
  }

  async close(): Promise<void> {
    this.untrack();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
