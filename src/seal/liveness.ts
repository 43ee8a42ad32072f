// "Is the caller's execution still running?" without a database round trip per invoke (used with the Redis replay
// record; without Redis the replay statement checks it in SQL). Per SEAL session: a live subscription to its event
// stream on the bus (Redis pub/sub across nodes) marks it ended the moment its terminal event is announced, and the
// database is re-read at most every `revalidateMs` as a safety net for a lost pub/sub message. The subscription is
// made BEFORE the first database read, so an end between the two cannot be missed. An ended execution stays ended
// (no resurrection), and its subscription is closed.
import type { EventBus, Subscription } from '../bus/bus.ts';
import { executionStream, TERMINAL_EVENTS } from '../agents/execution/events.ts';
import type { Db } from '../storage/db.ts';
import type { Logger } from '../logging/logger.ts';

export const DEFAULT_REVALIDATE_MS = 1000;
const MAX_TRACKED = 10_000;

interface State {
  ended: boolean;
  checkedAt: number;
  sub?: Promise<Subscription | undefined>;
  /** false when the bus subscription failed: then every call reads the database. */
  subscribed: boolean;
  /** An in-flight database read, shared by concurrent invokes. */
  reading?: Promise<boolean>;
}

export class ExecutionLiveness {
  private readonly states = new Map<string, State>();

  constructor(
    private readonly o: { db: Db; bus: EventBus; logger: Logger; revalidateMs?: number; now?: () => number },
  ) {}

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  /** true while the execution is pending/running and the session is active. */
  async isLive(executionId: string, sessionId: string): Promise<boolean> {
    let st = this.states.get(sessionId);
    if (!st) {
      if (this.states.size >= MAX_TRACKED) this.forgetAll();
      st = { ended: false, checkedAt: -Infinity, subscribed: true };
      this.states.set(sessionId, st);
      const state = st;
      st.sub = this.o.bus
        .subscribe(executionStream(executionId), (e) => {
          if (TERMINAL_EVENTS.has(e.type)) this.markEnded(state);
        })
        .catch((err: unknown) => {
          // Without the subscription nothing announces the end: read the database on every call instead.
          this.o.logger.warn({ err, execution: executionId }, 'SEAL liveness: bus subscription failed');
          state.subscribed = false;
          return undefined;
        });
      await st.sub;
    }
    if (st.ended) return false;
    if (st.subscribed && this.now() - st.checkedAt < (this.o.revalidateMs ?? DEFAULT_REVALIDATE_MS)) return true;
    st.reading ??= this.read(executionId, sessionId, st).finally(() => (st.reading = undefined));
    return st.reading;
  }

  private async read(executionId: string, sessionId: string, st: State): Promise<boolean> {
    const row = (
      await this.o.db.query<{ exec_status: string | null; session_status: string | null }>(
        `SELECT (SELECT status FROM executions WHERE id = $2) AS exec_status, (SELECT status FROM seal_sessions WHERE session_id = $1) AS session_status`,
        [sessionId, executionId],
      )
    ).rows[0];
    const live = !!row && (row.exec_status === 'pending' || row.exec_status === 'running') && row.session_status === 'active';
    if (!live) this.markEnded(st);
    else st.checkedAt = this.now();
    return live;
  }

  /** Ended for good (kept, bounded by MAX_TRACKED, so that later calls answer at once). */
  private markEnded(st: State): void {
    if (st.ended) return;
    st.ended = true;
    void st.sub?.then((s) => s?.close()).catch(() => undefined);
  }

  private forgetAll(): void {
    for (const st of this.states.values()) void st.sub?.then((s) => s?.close()).catch(() => undefined);
    this.states.clear();
  }

  async close(): Promise<void> {
    this.forgetAll();
  }
}
