// Opens the node's database: PostgreSQL/CockroachDB when a URL is configured, otherwise PGlite under the data dir,
// and brings its schema up to date before anyone uses it.
import path from 'node:path';
import type { Logger } from '../logging/logger.ts';
import type { Db } from './db.ts';
import { migrate } from './migrate.ts';
import { openPg } from './pg.ts';
import { openPglite } from './pglite.ts';

export interface OpenDbOptions {
  /** postgres://… (PostgreSQL or CockroachDB). Absent: embedded PGlite. */
  url?: string | undefined;
  /** The node's data dir; PGlite keeps its files in `<dataDir>/pglite`. */
  dataDir: string;
  poolSize?: number;
}

export async function openDb(options: OpenDbOptions, logger: Logger): Promise<Db> {
  const log = logger.child({ component: 'storage' });
  const db = options.url
    ? await openPg(options.url, { logger: log, ...(options.poolSize ? { poolSize: options.poolSize } : {}) })
    : await openPglite(path.join(options.dataDir, 'pglite'));
  try {
    const applied = await migrate(db, log);
    log.info({ database: db.kind, migrationsApplied: applied }, 'database ready');
    return db;
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
}
