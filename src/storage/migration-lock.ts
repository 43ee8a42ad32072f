// Keeps two nodes starting at once from migrating together. A single lock row, taken with a conditional upsert and
// given back by deleting it; the expiry frees it when its holder died mid-way. Advisory locks would be simpler but
// CockroachDB has none, and the row works the same on all three engines.
import { Errors, OrchError, RetryableError } from '../errors/catalog.ts';
import type { Db, Queryable } from './db.ts';
import { isSerializationFailure } from './retry.ts';

export interface LockOptions {
  /** How long the lock is valid without renewal. Default 60 s. */
  ttlMs: number;
  /** How long to wait for another holder before giving up. Default 120 s. */
  waitMs: number;
}

/**
 * Creates the bookkeeping tables. INT4 rather than INT: on CockroachDB INT is 64-bit and would come back as a
 * string. Two nodes doing this at once can collide in PostgreSQL's catalog: retried.
 */
export async function ensureMigrationTables(db: Db): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await db.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version INT4 PRIMARY KEY,
        name TEXT NOT NULL,
        applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
      )`);
      await db.query(`CREATE TABLE IF NOT EXISTS migration_lock (
        id INT4 PRIMARY KEY CHECK (id = 1),
        holder TEXT NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
      )`);
      return;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      // 23505: duplicate pg_type row, 42P07: duplicate table, 42710: duplicate object (the table's row type): each
      // means the other node just created it.
      if (attempt >= 5 || (code !== '23505' && code !== '42P07' && code !== '42710' && code !== '40001')) throw err;
      await new Promise((r) => setTimeout(r, 20 * attempt));
    }
  }
}

async function tryTake(db: Db, holder: string, ttlMs: number): Promise<boolean> {
  // A serialization failure is the migrating node committing its renewal of the row this statement waited on (once
  // per migration): tx retries it, and when it still conflicts after its attempts the lock is simply not taken yet;
  // the caller polls until its own deadline.
  try {
    return await db.tx(async (tx) => {
      const res = await tx.query(
        `INSERT INTO migration_lock (id, holder, expires_at)
         VALUES (1, $1, now() + ($2::INT * INTERVAL '1 millisecond'))
         ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
         WHERE migration_lock.expires_at < now() OR migration_lock.holder = excluded.holder
         RETURNING holder`,
        [holder, Math.round(ttlMs)],
      );
      return res.rows.length === 1;
    });
  } catch (err) {
    if (isSerializationFailure(err) || isSerializationFailure((err as { cause?: unknown }).cause)) return false;
    throw err;
  }
}

/** Waits until `holder` has the lock, polling with jitter; fails with UNAVAILABLE after `waitMs`. */
export async function takeMigrationLock(db: Db, holder: string, opts: LockOptions): Promise<void> {
  const deadline = Date.now() + opts.waitMs;
  while (!(await tryTake(db, holder, opts.ttlMs))) {
    if (Date.now() > deadline) {
      const res = await db.query<{ holder: string }>('SELECT holder FROM migration_lock WHERE id = 1');
      throw new RetryableError(`timed out waiting for the migration lock (held by ${res.rows[0]?.holder ?? 'nobody'})`);
    }
    await new Promise((r) => setTimeout(r, 50 + Math.random() * 150));
  }
}

/**
 * Inside a migration's transaction: proves the lock is still ours and extends it. The row lock this takes also
 * holds off a competitor until the migration commits.
 */
export async function renewMigrationLock(tx: Queryable, holder: string, ttlMs: number): Promise<void> {
  const res = await tx.query(
    `UPDATE migration_lock SET expires_at = now() + ($2::INT * INTERVAL '1 millisecond')
     WHERE id = 1 AND holder = $1 AND expires_at >= now()
     RETURNING holder`,
    [holder, Math.round(ttlMs)],
  );
  if (res.rows.length !== 1) throw new OrchError(Errors.LEASE_LOST, 'the migration lock expired and was lost');
}

export async function releaseMigrationLock(db: Db, holder: string): Promise<void> {
  await db.query('DELETE FROM migration_lock WHERE id = 1 AND holder = $1', [holder]);
}
