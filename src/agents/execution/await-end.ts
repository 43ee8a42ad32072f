// Run-and-wait for executions (issue 16): `POST /v1/executions` with `Prefer: wait=N` answers the execution's end
// when it comes within the wait. Woken by the execution's terminal event on the bus (live only: no history query),
// wherever it runs (a worker's events reach the controller's bus); the row is read once after subscribing (an end
// committed before the subscription) and then every AWAIT_POLL_MS as the safety net for a lost event.
import type { EventBus } from '../../bus/bus.ts';
import type { Queryable } from '../../storage/db.ts';
import { executionStream, TERMINAL_EVENTS } from './events.ts';
import * as repo from './repo.ts';

export const AWAIT_POLL_MS = 2_000;

/** The terminal row of the execution if it ends within `waitMs` (undefined at the deadline or when `signal` aborts). */
export async function awaitExecutionEnd(db: Queryable, bus: EventBus, id: string, waitMs: number, signal?: AbortSignal, pollMs = AWAIT_POLL_MS): Promise<repo.ExecutionRow | undefined> {
  const deadline = Date.now() + waitMs;
  let wake: () => void = () => undefined;
  let ended = false;
  const sub = await bus.subscribe(executionStream(id), (e) => {
    if (!TERMINAL_EVENTS.has(e.type)) return;
    ended = true;
    wake();
  });
  const onAbort = (): void => wake();
  signal?.addEventListener('abort', onAbort);
  try {
    for (;;) {
      // Published after the commit: the row read after the event (or the poll period) sees the end.
      const row = await repo.getExecution(db, id);
      if (!row) return undefined;
      if (repo.isTerminal(row.status)) return row;
      const left = deadline - Date.now();
      if (left <= 0 || signal?.aborted) return undefined;
      if (!ended) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(pollMs, left));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = () => undefined;
      }
      ended = false;
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await sub.close();
  }
}
