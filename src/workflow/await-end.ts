// Run-and-wait (issue 16): the end of a run within a bounded wait, for callers that want Restate-style "start and
// answer the result" instead of a start plus a stream. No per-request polling on the common path: a run held by this
// process is woken by its terminal commit (the terminal cache, no row read); a run held by another node by its
// terminal event on the bus (the same fan-out the SSE stream uses). A row read every AWAIT_POLL_MS is only the safety
// net for a wake-up that never came (a lost bus message, a lease moved mid-run).
import type { ActorRuntime } from '../actors/runtime.ts';
import type { EventBus, Subscription } from '../bus/bus.ts';
import type { Db } from '../storage/db.ts';
import { WORKFLOW_KIND } from './engine/actor.ts';
import { TERMINAL_WORKFLOW_EVENTS, workflowStream } from './engine/events.ts';
import * as repo from './engine/repo.ts';
import type { TerminalCache, TerminalSnapshot, Wakers } from './engine/wakers.ts';

export const AWAIT_POLL_MS = 2_000;

/** The longest run-and-wait honoured (HTTP `Prefer: wait`, gRPC `wait_seconds`); a larger ask is capped. */
export const MAX_RUN_WAIT_SECONDS = 60;

export interface AwaitEndDeps {
  db: Db;
  bus: EventBus;
  actors: ActorRuntime;
  wakers: Wakers;
  terminals?: TerminalCache | undefined;
}

/** The run's terminal snapshot if it ends within `waitMs` (or `signal` aborts first: undefined). */
export async function awaitRunEnd(d: AwaitEndDeps, id: string, waitMs: number, signal?: AbortSignal, pollMs = AWAIT_POLL_MS): Promise<TerminalSnapshot | undefined> {
  const deadline = Date.now() + waitMs;
  const key = `terminal:${id}`;
  // Held here: its end lands in the terminal cache and wakes `key`. Elsewhere: a live-only bus subscription (no
  // history query) turns its terminal event into the same wake-up.
  const local = d.terminals !== undefined && d.actors.isLive(WORKFLOW_KIND, id);
  let sub: Subscription | undefined;
  try {
    if (!local) {
      sub = await d.bus.subscribe(workflowStream(id), (e) => {
        if (TERMINAL_WORKFLOW_EVENTS.has(e.type)) d.wakers.wake(key);
      });
    }
    let readRow = !local; // after subscribing: an end committed before the subscription is seen by this read
    for (;;) {
      const cached = d.terminals?.take(id);
      if (cached) return cached;
      const left = deadline - Date.now();
      if (left <= 0 || signal?.aborted) return undefined;
      // Registered before the row read, so an end committed between the read and the wait still wakes it.
      const woken = d.wakers.wait(key, Math.min(pollMs, left), signal);
      if (readRow) {
        const row = await repo.getRunEnd(d.db, id);
        if (!row) return undefined;
        if (repo.isTerminalStatus(row.status)) {
          d.terminals?.take(id);
          return { status: row.status as TerminalSnapshot['status'], final_output: row.final_output ?? null, blackboard: row.blackboard };
        }
      }
      await woken;
      readRow = d.terminals?.peek(id) === undefined;
    }
  } finally {
    await sub?.close();
  }
}
