// "Resume, don't re-spend": every LLM answer and tool result is written here before the loop uses it. A resumed
// execution runs the same deterministic loop again; each step first looks up its key (`it2:llm1`,
// `it2:tool:<call id>`) and takes the recorded result instead of calling the model or running the tool again.
// Writes are fenced by the execution row's claim, so a node that lost the execution cannot add to its journal.
import type { Db } from '../../storage/db.ts';
import { fencedUpdate, type RowFence } from '../../storage/row-lease.ts';

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

  /** The recorded result of `key`, or runs `produce`, records its result (fenced) and answers it. */
  async step<T>(key: string, kind: JournalKind, produce: () => Promise<T>): Promise<T> {
    if (this.entries.has(key)) {
      this.replayed++;
      return this.entries.get(key) as T;
    }
    const result = await produce();
    await this.db.tx(async (tx) => {
      await fencedUpdate(tx, this.fence, 'updated_at = now()');
      await tx.query(
        `INSERT INTO execution_journal (execution_id, step_key, kind, result) VALUES ($1, $2, $3, $4::JSONB)`,
        [this.executionId, key, kind, JSON.stringify(result ?? null)],
      );
    });
    this.entries.set(key, result);
    return result;
  }
}
