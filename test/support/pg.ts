// A throwaway PostgreSQL database per test file: created on the server named by DATABASE_URL (or the local
// default) under a random name, dropped afterwards. Test files run in parallel processes, so nothing is shared.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

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

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `orch_test_${randomBytes(6).toString('hex')}`;
  // The name is ours and matches [a-z0-9_], so interpolating it is safe (CREATE DATABASE takes no parameters).
  await onAdmin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  return {
    url: url.toString(),
    name,
    drop: () => {
      dropped ??= onAdmin(async (c) => {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      });
      return dropped;
    },
  };
}
