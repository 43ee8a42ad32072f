// The two storage engines a service test runs on: PGlite in process and real PostgreSQL in a throwaway database,
// each opened once per file and migrated, shared by that engine's tests (which run one after another).
import type { TestFn } from 'ava';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Db } from '../../src/storage/db.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg } from '../../src/storage/pg.ts';
import { openMigratedPglite } from '../../src/storage/open.ts';
import { openPglite } from '../../src/storage/pglite.ts';
import { copyTree, templateFile } from '../../src/storage/pglite-template.ts';
import { createTestDatabase } from './pg.ts';

export type Fresh = () => Promise<{ db: Db; cleanup: () => Promise<void> }>;

/**
 * PGlite in a data dir under a fresh `prefix` directory (not memory://: the cached templates make it cheap), with
 * this build's schema from the schema template (sharedDb's migrate() then finds nothing to do).
 */
export function freshPglite(prefix: string): Fresh {
  return async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
    const db = await openMigratedPglite(path.join(dir, 'db'));
    return {
      db,
      cleanup: async () => {
        await db.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  };
}

/** A fresh directory under the system's temp dir, and how to remove it. */
export async function tempDir(prefix: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

let emptyCluster: Promise<string> | undefined;

/**
 * An empty PGlite cluster (initdb's, no schema) as a plain directory, made once per machine and PGlite version under
 * the temp dir. A fresh data dir made from the initdb tarball unpacks it through PGlite's WebAssembly file system:
 * ~2.3 s of CPU per database, of which a native copy of this directory and a plain open leave ~0.7 s (issue 15: the
 * suite's CPU). Built under a temporary name and renamed when complete, so a half-made one is never copied.
 */
function emptyClusterDir(): Promise<string> {
  emptyCluster ??= (async () => {
    const to = path.join(os.tmpdir(), `orch-test-${path.basename(await templateFile()).replace(/\.tar\.gz$/, '')}-empty.d`);
    if (existsSync(path.join(to, 'READY'))) return to;
    const made = `${to}.${process.pid}.${Date.now()}.tmp`;
    const db = await openPglite(made);
    await db.close();
    await writeFile(path.join(made, 'READY'), '');
    await rename(made, to).catch(() => rm(made, { recursive: true, force: true })); // another process made it first
    return to;
  })();
  emptyCluster.catch(() => (emptyCluster = undefined));
  return emptyCluster;
}

/** Makes `dataDir` (absent or empty) an empty PGlite cluster, as a fresh data dir opened from initdb's template is. */
export async function emptyPgliteDir(dataDir: string): Promise<string> {
  const from = await emptyClusterDir();
  await mkdir(dataDir, { recursive: true });
  await copyTree(from, dataDir);
  await rm(path.join(dataDir, 'READY'), { force: true });
  return dataDir;
}

/**
 * A Db that `open` makes in `<fresh temp dir>/db`, closed and its directory removed at cleanup (the PGlite adapters'
 * conformance runs). The directory starts as an empty cluster (emptyPgliteDir).
 */
export function freshInTempDir(prefix: string, open: (dir: string) => Promise<Db>): Fresh {
  return async () => {
    const tmp = await tempDir(prefix);
    const db = await open(await emptyPgliteDir(path.join(tmp.dir, 'db')));
    return {
      db,
      cleanup: async () => {
        await db.close();
        await tmp.remove();
      },
    };
  };
}

/** A throwaway PostgreSQL database. */
export const freshPg: Fresh = async () => {
  const database = await createTestDatabase();
  const db = await openPg(database.url, { poolSize: 6 });
  return {
    db,
    cleanup: async () => {
      await db.close();
      await database.drop();
    },
  };
};

/** One migrated database from `fresh`, opened before the file's first test and closed after its last; returns its getter. */
export function sharedDb(test: TestFn, fresh: Fresh): () => Db {
  let shared: { db: Db; cleanup: () => Promise<void> } | undefined;
  test.before(async () => {
    shared = await fresh();
    await migrate(shared.db);
  });
  test.after.always(async () => {
    await shared?.cleanup();
  });
  return () => shared!.db;
}
