// The Db adapter for PostgreSQL and CockroachDB (same wire protocol) on a pg.Pool.
import { databaseLabel, trackDbPool } from '../observability/clients.ts';
import pg from 'pg';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import { isCockroach } from './migration-guard.ts';
import { PlanGenerations, type PlanGenerationOptions } from './plan-generations.ts';
import type { Db, QueryOptions, QueryResult, Queryable, Row, TxOptions } from './db.ts';
import { withTxRetry, type RetryOptions } from './retry.ts';
import { retryingStatements } from './statement-retry.ts';
import { pgTypes } from './pg-types.ts';
import { inDbSpan } from '../observability/db.ts';
import { asOutage } from '../errors/outage.ts';

/** How long a readiness ping may take before the database counts as down (a frozen server never answers). */
const PING_TIMEOUT_MS = 2_000;

export type Isolation = 'serializable' | 'read committed';

export interface PgOptions {
  /** Connections in the pool. Default 10. */
  poolSize?: number;
  /**
   * Isolation of `tx`. Default serializable: CockroachDB runs nothing weaker by default, so PostgreSQL in tests
   * then reports the same conflicts (40001, retried) that production will, instead of silently allowing anomalies.
   */
  isolation?: Isolation;
  retry?: RetryOptions;
  /** Default 10 s. */
  connectTimeoutMs?: number;
  logger?: Logger;
  /**
   * Wraps the adapter beneath its standalone-statement retry (statement-retry.ts): the 40001 fault injection of
   * test/support/faulty-db.ts sits here, so a fault it raises meets the same retry loops a real one would.
   */
  inject?: (db: Db) => Db;
  /** The watch that remakes prepared statements' plans as tables grow (plan-generations.ts); false: none. */
  plans?: PlanGenerationOptions | false;
  /**
   * Connections of the generic-plan lane (QueryOptions.genericPlan), opened on first use and closed when idle.
   * Default 4 (the step writer's transactions in flight), at most poolSize; 0: no lane. PostgreSQL only.
   */
  genericPlanPoolSize?: number;
}

/** What openPg answers: a Db, and its plan generations (undefined on CockroachDB or when switched off). */
export interface PgDb extends Db {
  readonly plans: PlanGenerations | undefined;
}

function toResult<R extends object>(res: pg.QueryResult): QueryResult<R> {
  return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
}

/** The statement as pg takes it: named (prepared once per connection) when asked. */
function statement(sql: string, params: readonly unknown[] | undefined, options: QueryOptions | undefined): pg.QueryConfig {
  const values = params as unknown[] | undefined;
  return options?.prepare ? { name: options.prepare, text: sql, values } : { text: sql, values };
}

/**
 * The Queryable of a oneStatement transaction (TxOptions.oneStatement): run standalone, its one statement goes to the
 * pool as its own implicit transaction; a second would not be atomic with the first, so it throws instead (in a
 * real transaction too, so that a caller breaking the rule fails everywhere, not only where it runs standalone).
 */
function oneStatement(target: pg.Pool | Queryable): Queryable {
  let used = false;
  return {
    query: async <R extends object = Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) => {
      if (used) throw new Error('a oneStatement transaction ran a second statement');
      used = true;
      if (!(target instanceof pg.Pool)) return target.query<R>(sql, params, options);
      return toResult<R>(await inDbSpan(sql, () => target.query(statement(sql, params, options))));
    },
  };
}

function clientQueryable(client: pg.PoolClient): Queryable {
  return {
    query: async <R extends object = Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) =>
      toResult<R>(await inDbSpan(sql, () => client.query(statement(sql, params, options)))),
  };
}

// The generic-plan lane. PostgreSQL's default plan cache (plan_cache_mode = auto) plans a prepared statement for its
// parameters at every run unless the generic plan's estimated cost is no higher than the custom plans' average; for
// the step writer's statement it never is (a generic plan costs every unnest($n) and = ANY($1) at 10 elements, a
// custom plan the batch's real 1-8), so the statement was planned at every call: 0.3 ms of planning beside 0.3 ms of
// execution (docs/BENCHMARKS.md, issue 23). plan_cache_mode is a session setting and applies to every statement of a
// connection, unnamed ones included, and the unnamed statements must keep custom plans (a generic plan of
// `status IN ($2, $3)` cannot use the partial indexes on live rows). So the statements that ask for it run on a few
// connections of their own that force generic plans. Plan generations (plan-generations.ts) watch this pool too: a
// generic plan made while a table was small is remade when the table has doubled.
const GENERIC_PLANS = '-c plan_cache_mode=force_generic_plan';

class PgPoolDb implements Db {
  readonly kind = 'pg' as const;
  plans: PlanGenerations | undefined;
  /** The generic-plan lane (above); undefined on CockroachDB, when switched off, or until the server is known. */
  lane: pg.Pool | undefined;
  private closing: Promise<void> | undefined;
  /** Stops the pool's metrics (src/observability/clients.ts) when the pool ends. */
  untrack: () => void = () => undefined;
  /**
   * The server runs a session's implicit transactions at READ COMMITTED (PostgreSQL's default; not CockroachDB, not
   * a server or URL that says default_transaction_isolation = serializable): a oneStatement READ COMMITTED
   * transaction may then run as a standalone statement. Read once at open; a default changed later for new
   * sessions only makes such a statement run stricter (its conflicts are 40001, retried), never weaker.
   */
  readCommittedSessions = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly begin: string,
    private readonly retry: RetryOptions | undefined,
    private readonly logger: Logger | undefined,
  ) {}

  // Connection-class failures leave here as DependencyUnavailable (src/errors/outage.ts): callers tell an outage
  // from a terminal error by type, and the HTTP layer answers it with 503 and Retry-After.
  async query<R extends object = Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<R>> {
    try {
      const pool = options?.genericPlan && this.lane ? this.lane : this.pool;
      return toResult<R>(await inDbSpan(sql, () => pool.query(statement(sql, params, options))));
    } catch (err) {
      throw asOutage('database', err);
    }
  }

  async tx<T>(fn: (tx: Queryable) => Promise<T>, options?: TxOptions): Promise<T> {
    const readCommitted = options?.isolation === 'read committed';
    const begin = readCommitted ? 'BEGIN ISOLATION LEVEL READ COMMITTED' : this.begin;
    try {
      if (readCommitted && options.oneStatement && this.readCommittedSessions) {
        return await withTxRetry(() => fn(oneStatement(this.pool)), this.retry);
      }
      const guarded = options?.oneStatement ? (tx: Queryable) => fn(oneStatement(tx)) : fn;
      return await inDbSpan('', () => withTxRetry(() => this.once(guarded, begin), this.retry), 'TRANSACTION');
    } catch (err) {
      throw asOutage('database', err);
    }
  }

  private async once<T>(fn: (tx: Queryable) => Promise<T>, begin: string): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    // A checked-out client has no pool listener: when the server drops the connection mid-transaction the client
    // emits 'error', and an 'error' event nobody listens to kills the process. The failing query rejects with
    // the same error, so noting it (the client is then not returned to the pool) is all there is to do.
    const onError = (err: Error): void => {
      broken ??= err;
      this.logger?.warn({ err }, 'PostgreSQL connection failed during a transaction');
    };
    client.on('error', onError);
    try {
      try {
        await client.query(begin);
      } catch (err) {
        broken = err instanceof Error ? err : new Error(String(err));
        throw err;
      }
      try {
        const result = await fn(clientQueryable(client));
        await client.query('COMMIT');
        return result;
      } catch (err) {
        // A failed ROLLBACK means the connection is unusable: drop it from the pool rather than reuse it.
        await client.query('ROLLBACK').catch((rollbackErr: unknown) => {
          broken = rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr));
        });
        throw err;
      }
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  async ping(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.pool.query('SELECT 1'),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('ping timed out')), PING_TIMEOUT_MS);
        }),
      ]);
      return true;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Idempotent: shutdown paths may close the same Db more than once. */
  close(): Promise<void> {
    this.plans?.stop();
    this.closing ??= Promise.all([this.pool.end(), this.lane?.end()]).then(
      () => this.untrack(),
      (err: unknown) => {
        this.untrack();
        throw err;
      },
    );
    return this.closing;
  }
}

/** Opens a pool on `url` and checks that the server answers; fails with UNAVAILABLE when it does not. */
/**
 * The lane's pool: its connections start with plan_cache_mode = force_generic_plan (a startup option, so no statement
 * of theirs ever runs without it). pg lets the URL's own `options` override the config's, so they are merged here.
 */
function genericPlanLane(url: string, size: number, opts: PgOptions): pg.Pool {
  const u = new URL(url);
  const options = [u.searchParams.get('options'), GENERIC_PLANS].filter(Boolean).join(' ');
  u.searchParams.delete('options');
  const lane = new pg.Pool({ connectionString: u.toString(), options, max: size, connectionTimeoutMillis: opts.connectTimeoutMs ?? 10_000, types: pgTypes });
  lane.on('error', (err) => opts.logger?.warn({ err }, 'idle PostgreSQL connection (generic-plan lane) failed'));
  return lane;
}

export async function openPg(url: string, opts: PgOptions = {}): Promise<PgDb> {
  const poolSize = opts.poolSize ?? 10;
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 10_000,
    types: pgTypes,
  });
  // An idle client that loses its connection emits on the pool; unhandled, that would kill the process.
  pool.on('error', (err) => opts.logger?.warn({ err }, 'idle PostgreSQL connection failed'));
  const begin = opts.isolation === 'read committed' ? 'BEGIN' : 'BEGIN ISOLATION LEVEL SERIALIZABLE';
  const raw = new PgPoolDb(pool, begin, opts.retry, opts.logger);
  raw.untrack = trackDbPool(pool, databaseLabel(url));
  // Attached before any connection exists, so every connection's plans are tracked from its first statement.
  const plans = opts.plans === false ? undefined : new PlanGenerations(raw, { logger: opts.logger, ...opts.plans });
  plans?.attach(pool);
  const db = retryingStatements(opts.inject ? opts.inject(raw) : raw, opts.retry);
  try {
    await pool.query('SELECT 1');
    // CockroachDB remakes its plans when table statistics change, and has no DISCARD PLANS (plan-generations.ts);
    // its plan cache is its own, so the generic-plan lane is PostgreSQL's only.
    const cockroach = await isCockroach(raw);
    if (!cockroach) {
      const level = await pool.query<{ default_transaction_isolation: string }>('SHOW default_transaction_isolation');
      raw.readCommittedSessions = level.rows[0]?.default_transaction_isolation === 'read committed';
    }
    if (plans && !cockroach) {
      raw.plans = plans;
      plans.start();
    }
    const laneSize = Math.min(poolSize, opts.genericPlanPoolSize ?? 4);
    let lane: pg.Pool | undefined;
    try {
      lane = !cockroach && laneSize > 0 ? genericPlanLane(url, laneSize, opts) : undefined;
    } catch (err) {
      // Only a URL that new URL() cannot read (pg's own parser took it): the statements then use the main pool.
      opts.logger?.warn({ err }, 'no generic-plan lane: the database URL could not be parsed');
    }
    if (lane) {
      plans?.attach(lane);
      const untrackLane = trackDbPool(lane, databaseLabel(url), 'generic_plans');
      const untrackMain = raw.untrack;
      raw.untrack = () => {
        untrackMain();
        untrackLane();
      };
      raw.lane = lane;
    }
  } catch (err) {
    raw.untrack();
    await pool.end().catch(() => undefined);
    // The message of a pg connection error names host and port, never the password.
    throw new OrchError(Errors.UNAVAILABLE, `cannot connect to the database: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return Object.assign(db, { plans: raw.plans });
}
