// Statements of a migration that only PostgreSQL (and PGlite) run: the line `-- postgresql-only` right before a
// statement marks it, and migrate.ts skips it on CockroachDB. For settings that have no CockroachDB counterpart and
// that CockroachDB refuses (autovacuum storage parameters), never for schema: the schema is the same on every engine.
// scripts/check-cockroach-sql.ts refuses such settings in a statement without the mark.
import type { Queryable } from './db.ts';

const MARK = /^[ \t]*--[ \t]*postgresql-only[ \t]*$/m;

/** Whether a statement of a migration (its text as splitSql cut it, leading comments included) carries the mark. */
export function isPostgresqlOnly(statement: string): boolean {
  return MARK.test(statement);
}

/** Whether the server is CockroachDB (its version() says so; PostgreSQL's and PGlite's say PostgreSQL). */
export async function isCockroach(db: Queryable): Promise<boolean> {
  const res = await db.query<{ v: string }>('SELECT version() AS v');
  return /cockroach/i.test(res.rows[0]?.v ?? '');
}
