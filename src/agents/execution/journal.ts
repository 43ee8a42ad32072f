// "Resume, don't re-spend": every LLM answer and tool result is written here before the loop uses it. A resumed
// execution runs the same deterministic loop again; each step first looks up its key (`it2:llm1`,
// `it2:tool:<call id>`) and takes the recorded result instead of calling the model or running the tool again.
// Writes are fenced by the execution row's claim, so a node that lost the execution cannot add to its journal.
import type { Db } from '../../storage/db.ts';
import { rowLost, type RowFence } from '../../storage/row-lease.ts';
import { ident } from '../../storage/sql-ident.ts';

export type JournalKind = 'llm' | 'tool' | 'judge' | 'memory';

export class Journal {
  private readonly entries = new Map<string, unknown>();
  /** Steps answered from the journal in this incarnation (for logs and tests). */
  replayed = 0;

  private constructor(
    private readonly db: Db,
    private readonly executionId: string,
    private readonly fence: RowFence,
  ) {}

  /** The journal of an execution that has not started: nothing recorded, so nothing to read. */
  static fresh(db: Db, executionId: string, fence: RowFence): Journal {
    return new Journal(db, executionId, fence);
  }

  static async load(db: Db, executionId: string, fence: RowFence): Promise<Journal> {
    const j = new Journal(db, executionId, fence);
    const res = await db.query<{ step_key: string; result: unknown }>(
      'SELECT step_key, result FROM execution_journal WHERE execution_id = $1',
      [executionId],
    );
    for (const r of res.rows) j.entries.set(r.step_key, r.result);
    return j;
  }

  get size(): number {
    return this.entries.size;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /**
   * The recorded result of `key`, or runs `produce`, records its result (fenced) and answers it. `alsoSet` (SQL and
   * parameters as `$1..$n`, e.g. the model's token counts) changes the execution's row in the same statement, so it
   * is written exactly when the step is recorded, in no extra round trip.
   */
  async step<T>(key: string, kind: JournalKind, produce: () => Promise<T>, alsoSet?: (result: T) => { sql: string; params: unknown[] }): Promise<T> {
    if (this.entries.has(key)) {
      this.replayed++;
      return this.entries.get(key) as T;
    }
    const result = await produce();
    const set = alsoSet?.(result);
    const params = set?.params ?? [];
    const n = params.length;
    // One statement (issue 24: it was a transaction of four, with the whole row parsed back): the fenced UPDATE and
    // the insert commit together or not at all, and a node that lost the claim inserts nothing.
    const res = await this.db.query<{ owned: boolean }>(
      `WITH owner AS (
         UPDATE ${ident(this.fence.table)} SET ${set ? `${set.sql}, ` : ''}updated_at = now()
         WHERE ${ident(this.fence.keyColumn)} = $${n + 1} AND owner_node = $${n + 2} AND epoch = $${n + 3}
         RETURNING 1
       ), recorded AS (
         INSERT INTO execution_journal (execution_id, step_key, kind, result)
         SELECT $${n + 4}::UUID, $${n + 5}::TEXT, $${n + 6}::TEXT, $${n + 7}::JSONB WHERE EXISTS (SELECT 1 FROM owner)
         RETURNING 1
       )
       SELECT EXISTS (SELECT 1 FROM owner) AS owned`,
      [...params, this.fence.key, this.fence.nodeId, this.fence.epoch, this.executionId, key, kind, JSON.stringify(result ?? null)],
    );
    if (!res.rows[0]?.owned) throw rowLost(this.fence);
    this.entries.set(key, result);
    return result;
  }
}
