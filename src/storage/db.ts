// The narrow storage interface every capability uses. Two adapters implement it: pg (PostgreSQL, CockroachDB in
// production) and PGlite (in-process, the zero-install default). SQL written against it stays in the subset all
// three engines run: no SERIAL, no LISTEN/NOTIFY, no advisory locks, no triggers or stored procedures.

export type Row = Record<string, unknown>;

// Row types are constrained to `object` rather than `Row` so that a row declared as an interface (which has no
// implicit index signature) can be named: db.query<NodeRow>(...).
export interface QueryResult<R extends object = Row> {
  rows: R[];
  /** Rows inserted, updated or deleted by the statement; for a SELECT, the rows returned (both adapters agree). */
  rowCount: number;
}

export interface QueryOptions {
  /**
   * Run it as a named prepared statement: each connection parses and plans it once, then only binds and executes
   * (for hot statements of fixed text, e.g. the group-commit writers). One name must always carry the same text.
   * Adapters without prepared statements (PGlite) ignore it.
   */
  prepare?: string;
  /**
   * Run it on the pg adapter's generic-plan lane: a few pooled connections with plan_cache_mode =
   * force_generic_plan, so a prepared statement is planned once per connection (and per plan generation) instead of
   * at every run. For named statements whose generic plan is index-driven for any batch (test/storage/
   * hot-statements.test.ts EXPLAINs it) but which PostgreSQL would plan anew every time: the step writer's, whose
   * arrays a generic plan estimates at 10 elements (docs/RETENTION.md). PostgreSQL only; elsewhere the main pool.
   */
  genericPlan?: boolean;
}

/** Anything that can run one statement: the Db itself or an open transaction. */
export interface Queryable {
  query<R extends object = Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<R>>;
}

export interface TxOptions {
  /**
   * Run this transaction at READ COMMITTED instead of the adapter's isolation, said in its BEGIN (`BEGIN ISOLATION
   * LEVEL READ COMMITTED`: one round trip, where BEGIN then SET TRANSACTION were two). For single-statement
   * transactions whose statement is written to be right at READ COMMITTED (an execution's event append: issue 24).
   * PGlite ignores it: its one connection runs one transaction at a time.
   */
  isolation?: 'read committed';
  /**
   * `fn` runs exactly one statement (a second one throws). Where the adapter knows its sessions already run
   * `isolation` by default (PostgreSQL at its default READ COMMITTED, PGlite), that statement then runs on its own,
   * as its implicit transaction: no BEGIN and no COMMIT, one round trip where there were three (issue 24: an
   * execution's six event appends). Retried on 40001 the same; everywhere else a transaction as without it.
   */
  oneStatement?: boolean;
}

export interface Db extends Queryable {
  /** Which engine this is; tests and benchmarks name it. */
  readonly kind: 'pg' | 'pglite';
  /**
   * Runs `fn` in one transaction and commits it. On SQLSTATE 40001 (serialization failure, CockroachDB's
   * "restart transaction") the whole function runs again, so `fn` must have no side effects outside `tx`.
   */
  tx<T>(fn: (tx: Queryable) => Promise<T>, options?: TxOptions): Promise<T>;
  /** Answers whether the database is reachable (readiness). */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
