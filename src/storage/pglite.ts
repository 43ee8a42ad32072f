// The Db adapter for PGlite: PostgreSQL compiled to WebAssembly, in-process, the zero-install default.
//
// PGlite is one connection. Its transaction() holds a mutex for the whole callback and its query() waits on that
// same mutex, so transactions never interleave and a query outside a transaction never runs inside someone else's.
// The consequence for callers: inside db.tx(fn), use the `tx` handed to fn; calling db.query there waits for the
// transaction to end, which never happens (on pg it would run on another connection, outside the transaction).
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { PGlite, type Results, type Transaction } from '@electric-sql/pglite';
import type { Db, QueryResult, Queryable, Row, TxOptions } from './db.ts';
import { oneStatement } from './one-statement.ts';
import { withTxRetry, type RetryOptions } from './retry.ts';
import { pgliteParsers } from './types.ts';
import path from 'node:path';
import { preloadPgliteAssets, takePgliteAssets } from './pglite-assets.ts';
import { copySchemaDir, installSchemaDir, isFreshDataDir, loadTemplate, saveTemplate, schemaDirTemplate } from './pglite-template.ts';

export const MEMORY = 'memory://';

export interface PgliteOptions {
  retry?: RetryOptions;
  /** Where the templates are cached (see pglite-template.ts); false to always run initdb (and every migration). */
  templateDir?: string | false;
  /**
   * The schema this database must have: `migrate` brings it up to date, `key` names that schema (schemaKey of the
   * migration files). A fresh data dir then starts from the schema template of that key when there is one (the
   * migrations find nothing to do), and when there is none, is migrated and dumped as that template.
   */
  schema?: { key: string; migrate: (db: Db) => Promise<unknown> };
}

/**
 * PostgreSQL's shared buffers for a node's PGlite: 16 MB instead of initdb's 128 MB. In WebAssembly they are part of
 * the instance's linear memory, zeroed at every start: 128 MB cost ~0.17 s of CPU per start (a third of PGlite's
 * own start, on the start's critical path) and ~130 MB of RSS for the node's whole life (issue 15 item 4: start-up).
 * One connection reading through the OS's page cache (PGlite's files are ordinary files) needs no large pool.
 */
export const PGLITE_SHARED_BUFFERS = '16MB';
const START_PARAMS = [...PGlite.defaultStartParams, '-c', `shared_buffers=${PGLITE_SHARED_BUFFERS}`];

const COUNTED = new Set(['INSERT', 'UPDATE', 'DELETE', 'MERGE']);

function toResult<R extends object>(res: Results<R>): QueryResult<R> {
  // PGlite reports affectedRows for writes and 0 for a SELECT; pg reports the row count for both.
  const command = res.command?.split(' ')[0]?.toUpperCase() ?? '';
  return { rows: res.rows, rowCount: COUNTED.has(command) ? (res.affectedRows ?? 0) : res.rows.length };
}

function queryable(target: PGlite | Transaction): Queryable {
  return {
    query: async <R extends object = Row>(sql: string, params?: readonly unknown[]) =>
      toResult<R>(await target.query<R>(sql, params as unknown[] | undefined)),
  };
}

class PgliteDb implements Db {
  readonly kind = 'pglite' as const;
  private readonly outside: Queryable;

  constructor(
    private readonly pglite: PGlite,
    private readonly retry: RetryOptions | undefined,
  ) {
    this.outside = queryable(pglite);
  }

  query<R extends object = Row>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
    return this.outside.query<R>(sql, params);
  }

  tx<T>(fn: (tx: Queryable) => Promise<T>, options?: TxOptions): Promise<T> {
    // One connection runs one transaction at a time, so the isolation asked for changes nothing here, and one
    // statement needs no BEGIN and COMMIT around it (TxOptions.oneStatement).
    if (options?.oneStatement) return withTxRetry(() => fn(oneStatement(this.outside)), this.retry);
    // BEGIN, COMMIT, and ROLLBACK when fn throws, under PGlite's transaction mutex (see the file comment).
    return withTxRetry(() => this.pglite.transaction((t) => fn(queryable(t))), this.retry);
  }

  async ping(): Promise<boolean> {
    try {
      await this.pglite.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (!this.pglite.closed) await this.pglite.close();
  }
}

/** Opens (creating when absent) a PGlite database in `dataDir`, or an in-memory one for `memory://`. */
export async function openPglite(dataDir: string, opts: PgliteOptions = {}): Promise<Db> {
  if (dataDir === MEMORY) {
    const pglite = new PGlite(dataDir, { parsers: pgliteParsers });
    await pglite.waitReady;
    return new PgliteDb(pglite, opts.retry);
  }
  // Read and compiled on other threads while the data dir is prepared (pglite-assets.ts).
  preloadPgliteAssets();
  await mkdir(dataDir, { recursive: true });
  const useTemplate = opts.templateDir !== false && isFreshDataDir(dataDir);
  const dir = opts.templateDir === false ? undefined : opts.templateDir;
  // Cheapest first: the schema template as a directory, copied natively; then as a tarball; then initdb's.
  const copied = useTemplate && opts.schema ? await copySchemaDir(dir, opts.schema.key, dataDir) : false;
  const schemaTemplate = useTemplate && opts.schema && !copied ? await loadTemplate(dir, opts.schema.key) : undefined;
  const template = copied ? undefined : (schemaTemplate ?? (useTemplate ? await loadTemplate(dir) : undefined));
  const pglite = new PGlite(dataDir, { parsers: pgliteParsers, startParams: START_PARAMS, ...(await takePgliteAssets()), ...(template ? { loadDataDir: template } : {}) });
  await pglite.waitReady;
  // The templates are only a speed-up: failing to write one (read-only install, full disk) is not an error.
  if (useTemplate && !template && !copied) await saveTemplate(pglite, dir).catch(() => undefined);
  const db = new PgliteDb(pglite, opts.retry);
  if (opts.schema) {
    try {
      // Also from the schema template: cheap (nothing pending), and it keeps migrate's checks and warnings.
      await opts.schema.migrate(db);
    } catch (err) {
      await db.close().catch(() => undefined);
      throw err;
    }
    // Dumped before the caller gets the database: nothing but the migrations has written to it yet.
    if (useTemplate && !schemaTemplate && !copied) await saveTemplate(pglite, dir, opts.schema.key).catch(() => undefined);
  }
  return db;
}

/**
 * Drops template0 and template1 from a cluster that becomes the directory template. PGlite only ever opens the
 * database "postgres" (its single-user backend takes one database), so they are never used; their ~600 files were
 * half of what every fresh data dir copied, and creating a file costs about a millisecond of kernel time on the test
 * machines (issue 15: a node's start, and every test that starts one).
 */
async function dropTemplateDatabases(pglite: PGlite): Promise<void> {
  await pglite.exec("UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')");
  await pglite.exec('DROP DATABASE template0');
  await pglite.exec('DROP DATABASE template1');
}

/**
 * Makes the schema template of `key` also a directory (see copySchemaDir): unpacks the tarball into a scratch data
 * dir with PGlite, closes it cleanly, and moves it into place. Run by `npm install` (scripts/prime-pglite-template.mjs),
 * not at start-up: it costs one more PGlite start. Does nothing when the directory is there or the tarball is not.
 */
export async function materializeSchemaDir(key: string, templateDir?: string): Promise<void> {
  const to = await schemaDirTemplate(templateDir, key);
  if (existsSync(path.join(to, 'READY'))) return;
  const tarball = await loadTemplate(templateDir, key);
  if (!tarball) return;
  const made = `${to}.${process.pid}.${Date.now()}.tmp`;
  const pglite = new PGlite(made, { loadDataDir: tarball });
  await pglite.waitReady;
  await dropTemplateDatabases(pglite);
  await pglite.close();
  await installSchemaDir(templateDir, key, made);
}
