// Plans of prepared statements, remade when the tables they read have grown (issue 23).
//
// The hot statements run as named prepared statements (parsed once per connection). PostgreSQL plans the first five
// runs for their parameters, then settles on a generic plan and keeps it until something invalidates it: an ANALYZE
// (autovacuum's) or a schema change. A plan settled in a node's first seconds, while a table holds a page or two, is a
// sequential scan; if autovacuum lags (a busy server: the soak fell from ~90 to ~18 runs/s that way), every
// later run reads the whole, growing table. Planning at every run (plan_cache_mode = force_custom_plan, the previous
// answer) never keeps such a plan, but costs 0.25-0.45 ms per batch of the group-commit statements, about as much as
// running them.
//
// So plans are kept, and remade when they may have become wrong: a slow timer reads the size on disk of every table
// of the schema (pg_relation_size: the blocks the planner itself counts, current even when no ANALYZE has run), and
// when one has grown by `growth` times since the sizes the current plans were made with, the pool's plan generation
// goes up. A pooled connection checked out under an older generation first runs DISCARD PLANS (queued ahead of the
// caller's statement: no extra wait, one round trip per connection and generation), so its prepared statements are
// planned again, for the table as it now is, exactly as an ANALYZE would have made them. Generations grow with the
// logarithm of the tables' size (about twenty from one page to a gigabyte), so almost every statement runs a cached
// plan. A table that shrinks (retention, a TRUNCATE) lowers its reference size without a new generation: plans made
// on the larger table stay right for a smaller one, and the next doubling from the smaller size remakes them.
//
// CockroachDB has neither pg_relation_size nor DISCARD PLANS, and needs neither: its optimizer's plan cache is
// invalidated when new table statistics arrive. The watch is not started there (pg.ts asks version() first).
import type pg from 'pg';
import type { Logger } from '../logging/logger.ts';
import type { Queryable } from './db.ts';

/** The block count the planner reads, per ordinary table of the connection's schema. */
export const TABLE_SIZES_SQL = `SELECT c.relname AS name, pg_relation_size(c.oid)::FLOAT8 AS bytes
  FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`;

export const DISCARD_PLANS = 'DISCARD PLANS';

export interface PlanGenerationOptions {
  /** How often the sizes are read. Default 5 s: a doubling in the first seconds of a node is seen within 5 s. */
  intervalMs?: number;
  /** Growth (times the reference size) that starts a new generation. Default 2. */
  growth?: number;
  /** Sizes below this count as this (a few pages: any plan is cheap there). Default 64 KiB (8 pages). */
  floorBytes?: number;
  logger?: Logger | undefined;
}

export class PlanGenerations {
  private gen = 0;
  /** Per table: the size the current generation's plans were made with (lowered when the table shrinks). */
  private readonly reference = new Map<string, number>();
  /** The generation each pooled connection's cached plans belong to. */
  private readonly clients = new WeakMap<pg.ClientBase, number>();
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<boolean> | undefined;
  private failed = false;
  private readonly growth: number;
  private readonly floor: number;
  private readonly intervalMs: number;

  constructor(
    private readonly db: Queryable,
    private readonly opts: PlanGenerationOptions = {},
  ) {
    this.growth = opts.growth ?? 2;
    this.floor = opts.floorBytes ?? 64 * 1024;
    this.intervalMs = opts.intervalMs ?? 5_000;
  }

  /** The current generation (0 until a table has grown past its reference size). */
  get generation(): number {
    return this.gen;
  }

  /** The pool's hooks: a new connection has no cached plans; one checked out under an older generation drops its
   * plans before anything else it runs (DISCARD PLANS is queued first: pg runs a client's queries in order). */
  attach(pool: pg.Pool): void {
    pool.on('connect', (client) => this.clients.set(client, this.gen));
    pool.on('acquire', (client) => {
      const seen = this.clients.get(client);
      if (seen === undefined || seen === this.gen) {
        this.clients.set(client, this.gen);
        return;
      }
      this.clients.set(client, this.gen);
      // A failure here means the connection failed, and the caller's own statement, queued behind, reports it.
      client.query(DISCARD_PLANS).catch((err: unknown) => this.opts.logger?.debug({ err }, 'DISCARD PLANS failed'));
    });
  }

  /** Reads the sizes once (joining a read under way); answers whether a new generation began. */
  check(): Promise<boolean> {
    this.checking ??= this.read().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async read(): Promise<boolean> {
    const res = await this.db.query<{ name: string; bytes: number }>(TABLE_SIZES_SQL);
    let grown: { name: string; from: number; to: number } | undefined;
    for (const { name, bytes } of res.rows) {
      const size = Math.max(this.floor, bytes);
      const ref = this.reference.get(name);
      if (ref === undefined || size < ref) this.reference.set(name, size);
      else if (size >= ref * this.growth) grown ??= { name, from: ref, to: size };
    }
    if (!grown) return false;
    // Every table's reference moves to its current size: the new plans are made with all of them.
    for (const { name, bytes } of res.rows) this.reference.set(name, Math.max(this.floor, bytes));
    this.gen++;
    this.opts.logger?.debug({ generation: this.gen, table: grown.name, fromBytes: grown.from, toBytes: grown.to }, 'a table has grown: prepared statements are planned again');
    return true;
  }

  /** Reads the sizes now and then every interval, until stop(). A failing read is logged once and retried. */
  start(): void {
    if (this.timer) return;
    const tick = (): void => {
      this.check().then(
        () => undefined,
        (err: unknown) => {
          if (this.failed) return;
          this.failed = true;
          this.opts.logger?.warn({ err }, 'cannot read table sizes; prepared statements keep their plans until the next ANALYZE');
        },
      );
    };
    tick();
    this.timer = setInterval(tick, this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
