// A throwaway PostgreSQL database per test file: created on the server named by DATABASE_URL (or the local
// default) under a random name, dropped afterwards. Test files run in parallel processes, so nothing is shared.
//
// `migrated: true` copies a database that already has this checkout's schema (CREATE DATABASE … TEMPLATE) instead
// of leaving the migrations to whoever opens it first: applying them one by one took 2-8 s per database, in ~150
// databases per suite run (issue 15: the suite's wall time). Tests of migrating itself keep an empty database.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../../src/storage/migrate.ts';
import { listMigrations } from '../../src/storage/migration-files.ts';
import { openPg } from '../../src/storage/pg.ts';
import { schemaKey } from '../../src/storage/pglite-template.ts';

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** The server the tests use; a missing server makes the tests fail, never skip. */
export function adminUrl(): string {
  return process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
}

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

async function onAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

function urlOf(name: string): string {
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/** Serializes the making of templates across test processes (and checkouts sharing the server). */
const TEMPLATE_LOCK = 0x6f726368_7470; // "orch" "tp"

let template: Promise<string> | undefined;

/**
 * The name of the migrated template for this checkout's migrations (keyed by their hash, like PGlite's schema
 * template): made once per server, under an advisory lock, built under a temporary name and renamed when complete,
 * so a half-made one is never copied. Nobody connects to it after that, which CREATE DATABASE … TEMPLATE requires.
 */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const name = `orch_test_tpl_${await schemaKey(await listMigrations())}`;
    await onAdmin(async (c) => {
      await c.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
      try {
        if ((await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount) return;
        const building = `${name}_b${randomBytes(3).toString('hex')}`;
        await c.query(`CREATE DATABASE ${building}`);
        const db = await openPg(urlOf(building), { poolSize: 1 });
        try {
          await migrate(db);
        } finally {
          await db.close();
        }
        await c.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      } finally {
        await c.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
      }
    });
    return name;
  })();
  // A failed attempt is not remembered: the next caller tries again.
  template.catch(() => (template = undefined));
  return template;
}

export async function createTestDatabase(opts: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const name = `orch_test_${randomBytes(6).toString('hex')}`;
  const from = opts.migrated ? ` TEMPLATE ${await migratedTemplate()}` : '';
  // The names are ours and match [a-z0-9_], so interpolating them is safe (CREATE DATABASE takes no parameters).
  await onAdmin((c) => c.query(`CREATE DATABASE ${name}${from}`));
  let dropped: Promise<void> | undefined;
  return {
    url: urlOf(name),
    name,
    drop: () => {
      dropped ??= onAdmin(async (c) => {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      });
      return dropped;
    },
  };
}
