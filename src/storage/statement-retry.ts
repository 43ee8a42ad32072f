// Standalone statements (db.query outside a transaction) retried on SQLSTATE 40001. Each one runs as its own implicit
// transaction; CockroachDB retries those itself while it can, but answers 40001 when it cannot (results already
// streamed, a long statement pushed past its read timestamp), and PostgreSQL with default_transaction_isolation =
// serializable does the same. A statement that failed with 40001 was not applied — its implicit transaction aborted —
// so running it again is safe and writes nothing twice. Without this every caller (heartbeats, sweepers, request
// handlers) would see a raw 40001 as a bug-class error.
import type { Db } from './db.ts';
import { withTxRetry, type RetryOptions } from './retry.ts';

export function retryingStatements(inner: Db, retry?: RetryOptions): Db {
  return {
    kind: inner.kind,
    query: (sql, params, options) => withTxRetry(() => inner.query(sql, params, options), retry),
    tx: (fn, options) => inner.tx(fn, options),
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
}
