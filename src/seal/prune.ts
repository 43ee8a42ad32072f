// Pruning the database replay record of SEAL (seal_seen_signatures, the path without Redis; Redis keys expire on
// their own). A row is kept until keep_until — its session's expiry plus a minute (migration 050) —, past which the
// session's token is refused before any replay check. Each batch takes the oldest expired rows through the
// keep_until index (ORDER BY … LIMIT), never a scan of the table; any number of nodes may prune at once (a row
// deleted twice is deleted once).
import type { Logger } from '../logging/logger.ts';
import type { Queryable } from '../storage/db.ts';

export const PRUNE_SEEN_SIGNATURES = `DELETE FROM seal_seen_signatures WHERE (session_id, signature_hash) IN (
    SELECT session_id, signature_hash FROM seal_seen_signatures WHERE keep_until < now() ORDER BY keep_until LIMIT $1::INT4)`;

/** Deletes up to `batch` expired replay records; answers how many went. */
export async function pruneSeenSignatures(db: Queryable, batch = 1000): Promise<number> {
  return (await db.query(PRUNE_SEEN_SIGNATURES, [batch])).rowCount;
}

/**
 * Prunes every `intervalMs` (default a minute): batches of `batch` until one is not full, at most `maxBatches` a
 * pass so that one pass stays short. Answers the function that stops it.
 */
export function startSeenSignaturePruner(o: { db: Queryable; logger: Logger; intervalMs?: number; batch?: number; maxBatches?: number }): () => void {
  const batch = o.batch ?? 1000;
  let running = false;
  const pass = async (): Promise<void> => {
    if (running) return;
    running = true;
    try {
      let total = 0;
      for (let i = 0; i < (o.maxBatches ?? 20); i++) {
        const n = await pruneSeenSignatures(o.db, batch);
        total += n;
        if (n < batch) break;
      }
      if (total > 0) o.logger.debug({ pruned: total }, 'expired SEAL replay records pruned');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void pass().catch((err: unknown) => o.logger.warn({ err }, 'pruning SEAL replay records failed')), o.intervalMs ?? 60_000);
  timer.unref();
  return () => clearInterval(timer);
}
