// A fault-injecting Db: CockroachDB's retry error (SQLSTATE 40001) on a seeded fraction of statements, at the three
// places CockroachDB raises it — a transaction's first statement, a statement in the middle (after it ran: its
// effects are rolled back with the transaction), and the commit (the transaction's work is rolled back, nothing
// committed) — and on standalone statements before they run (their implicit transaction aborts, nothing applied).
// Put it beneath the adapter's retry loops with openPg(url, { inject: (db) => faultyDb(db, plan).db }), so that what
// it raises meets the same retries a real 40001 would. Seeded (mulberry32): one seed replays the same faults for
// the same sequence of statements.
//
// A transaction that swallows an injected fault and goes on (a try/catch around a statement that hides the error)
// would, on a real server, commit nothing (PostgreSQL turns that COMMIT into a ROLLBACK) or fail (CockroachDB): the
// wrapper counts it as `swallowed` and fails the commit with 40001, so the tests can demand that it never happens.
import type { Db, QueryOptions, QueryResult, Queryable, Row, TxOptions } from '../../src/storage/db.ts';
import { isSerializationFailure } from '../../src/storage/retry.ts';
import { seeded } from './seeded.ts';

export interface FaultPlan {
  seed: number;
  /** Fraction of transactions whose first statement fails before it runs. */
  first: number;
  /** Fraction of later statements in a transaction that fail after they ran. */
  mid: number;
  /** Fraction of transactions that fail at commit, after all their statements ran. */
  commit: number;
  /** Fraction of standalone statements (db.query) that fail before they run. */
  standalone: number;
  /**
   * Also inject at the first chance at each place (first, mid, commit, standalone), whatever the dice say: a workload
   * of few transactions (the engine's writers batch many runs into one statement) then still meets every kind.
   */
  everyPlace?: boolean;
}

export interface FaultCounts {
  first: number;
  mid: number;
  commit: number;
  standalone: number;
  /** Faults a transaction caught and did not rethrow (must stay 0). */
  swallowed: number;
  /** Real 40001s from the server (SERIALIZABLE conflicts), seen on their way to the retry loop. */
  real: number;
  transactions: number;
  commits: number;
  statements: number;
}

export interface FaultyDb {
  db: Db;
  counts: FaultCounts;
  /** Injected faults in all. */
  injected(): number;
  /** Stops injecting (e.g. for a test's final checks), or starts again. */
  enable(on: boolean): void;
}

export class InjectedConflict extends Error {
  readonly code = '40001';
  constructor(where: string) {
    super(`restart transaction: TransactionRetryWithProtoRefreshError (injected ${where})`);
    this.name = 'InjectedConflict';
  }
}

export function faultyDb(inner: Db, plan: FaultPlan): FaultyDb {
  const random = seeded(plan.seed);
  let on = true;
  const counts: FaultCounts = { first: 0, mid: 0, commit: 0, standalone: 0, swallowed: 0, real: 0, transactions: 0, commits: 0, statements: 0 };
  type Place = 'first' | 'mid' | 'commit' | 'standalone';
  const unmet = new Set<Place>(plan.everyPlace ? ['first', 'mid', 'commit', 'standalone'] : []);
  const roll = (place: Place): boolean => on && (unmet.delete(place) || (plan[place] > 0 && random() < plan[place]));
  const noteReal = (err: unknown): void => {
    if (isSerializationFailure(err) && !(err instanceof InjectedConflict)) counts.real++;
  };

  const db: Db = {
    kind: inner.kind,
    async query<R extends object = Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<R>> {
      counts.statements++;
      if (roll('standalone')) {
        counts.standalone++;
        throw new InjectedConflict('standalone statement');
      }
      try {
        return await inner.query<R>(sql, params, options);
      } catch (err) {
        noteReal(err);
        throw err;
      }
    },
    tx<T>(fn: (tx: Queryable) => Promise<T>, txOptions?: TxOptions): Promise<T> {
      return inner.tx(async (tx) => {
        counts.transactions++;
        let n = 0;
        let injected: InjectedConflict | undefined;
        const wrapped: Queryable = {
          async query<R extends object = Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<R>> {
            counts.statements++;
            if (injected) {
              // The transaction is aborted: a real server refuses every further statement.
              throw Object.assign(new Error('current transaction is aborted, commands ignored until end of transaction block'), { code: '25P02' });
            }
            if (n++ === 0 && roll('first')) {
              counts.first++;
              throw (injected = new InjectedConflict('at the first statement'));
            }
            let res: QueryResult<R>;
            try {
              res = await tx.query<R>(sql, params, options);
            } catch (err) {
              noteReal(err);
              throw err;
            }
            if (n > 1 && roll('mid')) {
              counts.mid++;
              throw (injected = new InjectedConflict('mid-transaction'));
            }
            return res;
          },
        };
        const result = await fn(wrapped);
        if (injected) {
          counts.swallowed++;
          throw injected;
        }
        if (roll('commit')) {
          counts.commit++;
          throw new InjectedConflict('at commit');
        }
        counts.commits++;
        return result;
        // Without oneStatement: faults go into a real transaction (a standalone statement cannot fail "at commit"
        // after it was applied, which this wrapper would otherwise simulate).
      }, txOptions?.isolation ? { isolation: txOptions.isolation } : undefined);
    },
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
  return {
    db,
    counts,
    injected: () => counts.first + counts.mid + counts.commit + counts.standalone,
    enable: (v) => {
      on = v;
    },
  };
}

/**
 * `url` with every session's default isolation SERIALIZABLE, as CockroachDB runs: standalone statements (implicit
 * transactions) too, not only the adapter's `BEGIN ISOLATION LEVEL SERIALIZABLE`.
 */
export function serializableUrl(url: string): string {
  const u = new URL(url);
  u.searchParams.set('options', '-c default_transaction_isolation=serializable');
  return u.toString();
}

/** The seed of a run: ORCH_FAULT_SEED replays one, otherwise a fixed default so CI is repeatable. */
export function faultSeed(fallback: number): number {
  const v = Number(process.env.ORCH_FAULT_SEED);
  return Number.isInteger(v) && v > 0 ? v : fallback;
}

/** One line for the test log (and docs/COCKROACH.md): what was injected, what the server raised itself. */
export function describeFaults(c: FaultCounts): string {
  return `statements=${c.statements} transactions=${c.transactions} injected: first=${c.first} mid=${c.mid} commit=${c.commit} standalone=${c.standalone}; real 40001=${c.real}; swallowed=${c.swallowed}`;
}

export function sumCounts(all: readonly FaultCounts[]): FaultCounts {
  const sum: FaultCounts = { first: 0, mid: 0, commit: 0, standalone: 0, swallowed: 0, real: 0, transactions: 0, commits: 0, statements: 0 };
  for (const c of all) for (const k of Object.keys(sum) as (keyof FaultCounts)[]) sum[k] += c[k];
  return sum;
}
