// The first steps of a node's start, which need nothing but the config: the database (opened and migrated) and the
// authenticator (for a fresh data dir, the dev identity's key). `orch up` begins them before it loads the rest of the
// node's modules (~2,000 files), so PGlite's WebAssembly, the schema template's copy and the key generation overlap
// that loading instead of following it (issue 15 item 4: start-up). startNode awaits them where it needs them.
import path from 'node:path';
import type { Authenticator } from '../auth/principal.ts';
import { createAuthenticator } from '../auth/authenticator.ts';
import type { NodeConfig } from '../config/types.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import { openDb } from '../storage/open.ts';
import { begunPgliteDb } from '../storage/pglite-thread.ts';
import { retryThroughOutage } from '../storage/outage-retry.ts';

/** How long a starting node waits for its database or Redis by default. */
export const DEFAULT_STARTUP_WAIT_SECONDS = 60;

export function startupWaitMs(seconds: number | undefined): number {
  return Math.round((seconds ?? DEFAULT_STARTUP_WAIT_SECONDS) * 1000);
}

export interface FirstSteps {
  /** The database, open and migrated. */
  readonly db: Promise<Db>;
  /**
   * The same database before it is open, when it can be used so (PGlite begun on its worker thread by `orch up`,
   * pglite-thread.ts): statements wait until it is ready. startNode builds the node with it meanwhile.
   */
  readonly early?: Db;
  readonly authenticator: Promise<Authenticator>;
}

/** The node's logger, as startNode makes it (every line names the node and its role). */
export function nodeLogger(config: NodeConfig, logger: Logger): Logger {
  return logger.child({ node: config.node.id, role: config.node.role });
}

/**
 * Begins opening the database and making the authenticator. Both promises are awaited by startNode, which reports
 * their failures; until then a rejection is held, never unhandled.
 */
export function beginFirstSteps(config: NodeConfig, logger: Logger): FirstSteps {
  const log = nodeLogger(config, logger);
  // A node (re)started while PostgreSQL is down waits for it (issue 20), bounded by startup_wait_seconds.
  const db = retryThroughOutage(() => openDb({ url: config.database.url, dataDir: config.dataDir }, log), {
    maxElapsedMs: startupWaitMs(config.database.startup_wait_seconds),
    logger: log,
    what: 'connect to the database at start',
  });
  const authenticator = createAuthenticator(config);
  void db.catch(() => undefined);
  void authenticator.catch(() => undefined);
  const early = config.database.url ? undefined : begunPgliteDb(path.join(config.dataDir, 'pglite'));
  return { db, authenticator, ...(early ? { early } : {}) };
}
