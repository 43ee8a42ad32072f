// Opens the node's database: PostgreSQL/CockroachDB when a URL is configured, otherwise PGlite under the data dir,
// and brings its schema up to date before anyone uses it.
import path from 'node:path';
import type { Logger } from '../logging/logger.ts';
import type { Db } from './db.ts';
import { migrate } from './migrate.ts';
import { listMigrations } from './migration-files.ts';
import { preloadPgliteAssets } from './pglite-assets.ts';
import { schemaKey } from './pglite-template.ts';

export interface OpenDbOptions {
  /** postgres://… (PostgreSQL or CockroachDB). Absent: embedded PGlite. */
  url?: string | undefined;
  /** The node's data dir; PGlite keeps its files in `<dataDir>/pglite`. */
  dataDir: string;
  poolSize?: number;
}

export async function openDb(options: OpenDbOptions, logger: Logger): Promise<Db> {
  const log = logger.child({ component: 'storage' });
  if (!options.url) {
    // On a worker thread (pglite-thread.ts): PostgreSQL's start runs beside the node's loading, not on its thread.
    const { openPgliteThread } = await import('./pglite-thread.ts');
    const { db, applied } = await openPgliteThread(path.join(options.dataDir, 'pglite'), { logger: log });
    log.info({ database: db.kind, migrationsApplied: applied }, 'database ready');
    return db;
  }
  // Loaded only for a database URL: a PGlite node does not load pg (start-up).
  const { openPg } = await import('./pg.ts');
  const db = await openPg(options.url, { logger: log, ...(options.poolSize ? { poolSize: options.poolSize } : {}) });
  try {
    const applied = await migrate(db, log);
    log.info({ database: db.kind, migrationsApplied: applied }, 'database ready');
    return db;
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
}

/**
 * PGlite in `dataDir` with this build's schema: a fresh data dir starts from the schema template (initdb plus every
 * migration, see pglite-template.ts) instead of applying the migrations one by one. `run` defaults to migrate().
 */
export async function openMigratedPglite(dataDir: string, run: (db: Db) => Promise<unknown> = (db) => migrate(db)): Promise<Db> {
  // Before hashing the migrations: PGlite's files are read and compiled meanwhile (pglite-assets.ts).
  preloadPgliteAssets();
  const key = await schemaKey(await listMigrations());
  // Imported here: the node's main thread opens PGlite on a worker (openDb) and does not load it.
  const { openPglite } = await import('./pglite.ts');
  return openPglite(dataDir, { schema: { key, migrate: run } });
}
