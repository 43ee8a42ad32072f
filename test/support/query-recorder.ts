// A Db that records every statement it runs (text, the parameters of its last run, and whether it was prepared),
// including those run inside transactions, and passes everything on to the real Db underneath. Tests drive the real
// code paths through it and then look at the statements those paths sent (e.g. EXPLAIN them on a loaded database).
import type { Db, QueryOptions, QueryResult, Queryable, Row } from '../../src/storage/db.ts';

export interface RecordedStatement {
  sql: string;
  params: readonly unknown[];
  calls: number;
}

export interface QueryRecorder {
  db: Db;
  /** Distinct statement texts in the order first seen. */
  statements(): RecordedStatement[];
  /** Forgets what was recorded so far (e.g. the set-up's statements). */
  clear(): void;
}

export function recordQueries(inner: Db): QueryRecorder {
  const seen = new Map<string, RecordedStatement>();
  const note = (sql: string, params: readonly unknown[] | undefined): void => {
    const s = seen.get(sql);
    if (s) {
      s.calls++;
      s.params = params ?? [];
    } else seen.set(sql, { sql, params: params ?? [], calls: 1 });
  };
  const wrap = (q: Queryable): Queryable => ({
    query<R extends object = Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<R>> {
      note(sql, params);
      return q.query<R>(sql, params, options);
    },
  });
  const db: Db = {
    kind: inner.kind,
    query: (sql, params, options) => wrap(inner).query(sql, params, options),
    tx: (fn, options) => inner.tx((tx) => fn(wrap(tx)), options),
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
  return { db, statements: () => [...seen.values()], clear: () => seen.clear() };
}
