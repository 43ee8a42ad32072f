// Applies the numbered SQL files in order at start-up. Each file runs in one transaction together with its
// schema_migrations row, so a file is either wholly applied and recorded or not at all. Files are never edited once
// committed: a change to the schema is a new file.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Logger } from '../logging/logger.ts';
import type { Db } from './db.ts';
import { listMigrations, readMigration, type MigrationFile } from './migration-files.ts';
import {
  ensureMigrationTables,
  releaseMigrationLock,
  renewMigrationLock,
  takeMigrationLock,
} from './migration-lock.ts';
import { isCockroach, isPostgresqlOnly } from './migration-guard.ts';
import { splitSql } from './sql-split.ts';

export interface MigrateOptions {
  /** Directory of NNN_name.sql files; default src/storage/migrations. */
  dir?: string;
  lockTtlMs?: number;
  lockWaitMs?: number;
}

async function appliedVersions(db: Db): Promise<Map<number, string>> {
  const res = await db.query<{ version: number; name: string }>('SELECT version, name FROM schema_migrations');
  return new Map(res.rows.map((r) => [r.version, r.name]));
}

/** Applies what is pending and answers the versions this call applied (empty when the schema was current). */
export async function migrate(db: Db, logger?: Logger, options: MigrateOptions = {}): Promise<number[]> {
  const files = await listMigrations(options.dir);
  await ensureMigrationTables(db);
  // The common start-up finds nothing to do: answer without touching the lock.
  if (pending(files, await appliedVersions(db)).length === 0) return [];

  const ttlMs = options.lockTtlMs ?? 60_000;
  const holder = `${os.hostname()}:${process.pid}:${randomUUID()}`;
  await takeMigrationLock(db, holder, { ttlMs, waitMs: options.lockWaitMs ?? 120_000 });
  try {
    // Read again under the lock: another node may have applied them while we waited.
    const applied = await appliedVersions(db);
    warnAboutDrift(files, applied, logger);
    const done: number[] = [];
    const cockroach = await isCockroach(db);
    for (const file of pending(files, applied)) {
      const statements = splitSql(await readMigration(file)).filter((s) => !(cockroach && isPostgresqlOnly(s)));
      await db.tx(async (tx) => {
        await renewMigrationLock(tx, holder, ttlMs);
        for (const sql of statements) await tx.query(sql);
        await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [file.version, file.name]);
      });
      logger?.info({ version: file.version, name: file.name }, 'migration applied');
      done.push(file.version);
    }
    return done;
  } catch (err) {
    logger?.error({ err }, 'migration failed');
    throw err;
  } finally {
    await releaseMigrationLock(db, holder).catch((err: unknown) =>
      logger?.warn({ err }, 'could not release the migration lock; it frees itself when it expires'),
    );
  }
}

function pending(files: MigrationFile[], applied: Map<number, string>): MigrationFile[] {
  return files.filter((f) => !applied.has(f.version));
}

function warnAboutDrift(files: MigrationFile[], applied: Map<number, string>, logger: Logger | undefined): void {
  if (!logger) return;
  const known = new Map(files.map((f) => [f.version, f.name]));
  const newest = Math.max(0, ...applied.keys());
  for (const [version, name] of applied) {
    const file = known.get(version);
    if (file === undefined) logger.warn({ version, name }, 'database has a migration this build does not know');
    else if (file !== name) logger.warn({ version, recorded: name, file }, 'migration file was renamed after being applied');
  }
  for (const f of pending(files, applied)) {
    if (f.version < newest) logger.warn({ version: f.version, newest }, 'applying a migration older than the newest applied');
  }
}
