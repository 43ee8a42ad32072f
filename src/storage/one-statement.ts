// A oneStatement transaction (db.ts TxOptions) on the single-connection adapters (PGlite in process and on its
// thread): one statement needs no BEGIN and COMMIT around it. Its own module so the thread's Db, on the main thread,
// does not load PGlite to get it.
import type { Queryable, Row } from './db.ts';

/** A oneStatement transaction's Queryable: its statement standalone, a second one refused. */
export function oneStatement(target: Queryable): Queryable {
  let used = false;
  return {
    query: <R extends object = Row>(sql: string, params?: readonly unknown[]) => {
      if (used) return Promise.reject(new Error('a oneStatement transaction ran a second statement'));
      used = true;
      return target.query<R>(sql, params);
    },
  };
}
