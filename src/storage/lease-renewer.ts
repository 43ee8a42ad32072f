// Renews all of one node's row claims on a table in ONE statement per tick, instead of one UPDATE per row every third
// of the lease: with a short lease (fast failover) and thousands of running rows, per-row renewals would be most of
// the node's writes. Fencing stays exact: a row is renewed only while (owner_node, epoch) still match the holder's
// claim, so a row another node has claimed (a new epoch) is never extended by the old owner; the holder is told it
// lost the row and stops its actor.
//
// Rows another transaction has locked right now (the group-commit writer writing a step of that very run) are
// skipped, not waited for — waiting would let a renewal that locks many rows deadlock with a writer batch that
// locks several in another order. A skipped row that still carries the holder's claim is renewed on the next tick
// (the lease outlives three ticks); only a row whose claim no longer matches is reported lost.
import type { Logger } from '../logging/logger.ts';
import type { Queryable } from './db.ts';
import { rowLost, type RowFence } from './row-lease.ts';
import { ident, ttlParam } from './sql-ident.ts';

export interface LeaseHolder {
  /** The row was renewed; `row` has the extra columns (e.g. `cancel_requested`). */
  renewed?(row: Record<string, unknown>): void;
  /** The claim is gone (another node claimed the row, or it was deleted); the holder must stop acting on it. */
  lost(err: Error): void;
}

export interface LeaseRenewerOptions {
  table: string;
  keyColumn: string;
  /** SQL type of the key column, for the array parameter (e.g. `UUID`, `TEXT`). */
  keyType: 'UUID' | 'TEXT';
  nodeId: string;
  ttlMs: number;
  /** Default: a third of the ttl. */
  intervalMs?: number;
  /** Extra columns returned for every renewed row (trusted names). */
  columns?: string[];
  logger: Logger;
}

interface Held {
  fence: RowFence;
  holder: LeaseHolder;
}

export interface RenewOutcome {
  renewed: number;
  skipped: number;
  lost: number;
}

export class LeaseRenewer {
  private readonly held = new Map<string, Held>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<RenewOutcome> | undefined;
  private readonly log: Logger;
  private readonly sql: string;

  constructor(
    private readonly db: Queryable,
    private readonly o: LeaseRenewerOptions,
  ) {
    this.log = o.logger.child({ component: 'lease-renewer', table: o.table });
    const t = ident(o.table);
    const k = ident(o.keyColumn);
    const extra = (o.columns ?? []).map((c) => `, w.${ident(c)}`).join('');
    // lk: the rows still ours (key, owner, epoch) that nobody else holds locked, locked in key order.
    // upd: their renewal. The last branch: rows still ours but locked elsewhere (skipped, not lost).
    // Every read of the table names its rows by key (`= ANY($1)`), so each is an index lookup of the held rows
    // whatever join the planner picks, never a scan of the table's whole history (issue 23).
    this.sql = `WITH v AS (SELECT * FROM unnest($1::${o.keyType}[], $2::INT4[]) AS v(k, epoch)),
      lk AS (
        SELECT w.${k} AS k FROM ${t} w JOIN v ON w.${k} = v.k AND w.epoch = v.epoch
        WHERE w.${k} = ANY($1::${o.keyType}[]) AND w.owner_node = $3 ORDER BY w.${k} FOR UPDATE OF w SKIP LOCKED
      ),
      upd AS (
        UPDATE ${t} w SET lease_expires_at = now() + ($4::INT * INTERVAL '1 millisecond')
        FROM lk WHERE w.${k} = ANY($1::${o.keyType}[]) AND w.${k} = lk.k RETURNING w.${k}::TEXT AS k, TRUE AS renewed${extra}
      )
      SELECT * FROM upd
      UNION ALL
      SELECT w.${k}::TEXT AS k, FALSE AS renewed${extra} FROM ${t} w JOIN v ON w.${k} = v.k AND w.epoch = v.epoch
      WHERE w.${k} = ANY($1::${o.keyType}[]) AND w.owner_node = $3 AND w.${k} NOT IN (SELECT k FROM lk)`;
  }

  get intervalMs(): number {
    return this.o.intervalMs ?? Math.max(50, Math.round(this.o.ttlMs / 3));
  }

  /** Renews `fence` from the next tick on, until `release`; the holder hears of renewals and of the loss. */
  hold(fence: RowFence, holder: LeaseHolder): void {
    if (fence.table !== this.o.table || fence.nodeId !== this.o.nodeId) throw new Error(`lease renewer for ${this.o.table}/${this.o.nodeId} cannot hold ${fence.table}/${fence.nodeId}`);
    this.held.set(this.norm(fence.key), { fence, holder });
  }

  /** Stops renewing the row (the run ended, or the holder gives it up); only the same claim is released. */
  release(fence: RowFence): void {
    const h = this.held.get(this.norm(fence.key));
    if (h && h.fence.epoch === fence.epoch) this.held.delete(this.norm(fence.key));
  }

  /** UUIDs come back from the database in lower case; a key is matched in that form. */
  private norm(key: string): string {
    return this.o.keyType === 'UUID' ? key.toLowerCase() : key;
  }

  get size(): number {
    return this.held.size;
  }

  start(): this {
    const loop = (): void => {
      this.running = this.tick()
        .catch((err: unknown) => {
          // A failed renewal loses nothing yet: the claims outlive several ticks; the next tick tries again.
          this.log.warn({ err, rows: this.held.size }, 'lease renewal failed');
          return { renewed: 0, skipped: 0, lost: 0 };
        })
        .finally(() => {
          if (this.timer !== undefined) {
            this.timer = setTimeout(loop, this.intervalMs);
            this.timer.unref();
          }
        });
    };
    this.timer = setTimeout(loop, this.intervalMs);
    this.timer.unref();
    return this;
  }

  async stop(): Promise<void> {
    const t = this.timer;
    this.timer = undefined;
    if (t) clearTimeout(t);
    await this.running?.catch(() => undefined);
  }

  /** One renewal of every held row: one statement. Exported for tests that drive it by hand. */
  async tick(): Promise<RenewOutcome> {
    if (this.held.size === 0) return { renewed: 0, skipped: 0, lost: 0 };
    const batch = [...this.held.values()];
    const res = await this.db.query<{ k: string; renewed: boolean } & Record<string, unknown>>(this.sql, [
      batch.map((h) => h.fence.key),
      batch.map((h) => h.fence.epoch),
      this.o.nodeId,
      ttlParam(this.o.ttlMs),
    ]);
    const seen = new Map(res.rows.map((r) => [r.k, r]));
    const out: RenewOutcome = { renewed: 0, skipped: 0, lost: 0 };
    for (const h of batch) {
      // Released or re-held (a new claim) while the statement ran: not this batch's business.
      const key = this.norm(h.fence.key);
      if (this.held.get(key) !== h) continue;
      const r = seen.get(key);
      if (!r) {
        out.lost++;
        this.held.delete(key);
        h.holder.lost(rowLost(h.fence));
      } else if (r.renewed) {
        out.renewed++;
        h.holder.renewed?.(r);
      } else out.skipped++;
    }
    if (out.lost) this.log.info({ lost: out.lost }, 'claims lost to another node');
    return out;
  }
}
