// In-process wake-ups for runs waiting on something another component resolves (an approval, a signal, a child
// run). The waiter also polls its row, so a resolution made on another node is seen too; this only makes the
// common single-node case immediate.
export class Wakers {
  private readonly waiting = new Map<string, Set<(woken: boolean) => void>>();

  /**
   * Resolves at the next wake(key), after `ms`, or when `signal` aborts, whichever is first: true when it was a
   * wake(key). `onWake` is called synchronously by that wake (a caller deciding something meanwhile sees it at once).
   */
  wait(key: string, ms: number, signal?: AbortSignal, onWake?: () => void): Promise<boolean> {
    return new Promise((resolve) => {
      const set = this.waiting.get(key) ?? new Set<(woken: boolean) => void>();
      this.waiting.set(key, set);
      const done = (woken: boolean): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        set.delete(done);
        if (set.size === 0 && this.waiting.get(key) === set) this.waiting.delete(key);
        if (woken) onWake?.();
        resolve(woken);
      };
      const onAbort = (): void => done(false);
      const timer = setTimeout(onAbort, ms);
      timer.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
      if (signal?.aborted) onAbort();
      set.add(done);
    });
  }

  wake(key: string): void {
    for (const fn of [...(this.waiting.get(key) ?? [])]) fn(true);
  }
}

/** What a finished run looked like at its terminal commit. */
export interface TerminalSnapshot {
  status: 'completed' | 'failed' | 'cancelled';
  final_output: unknown;
  blackboard: Record<string, unknown>;
}

/**
 * Terminal snapshots of runs that finished in this process, kept (bounded, oldest dropped) until a waiter takes
 * them, so a parent or a caller waiting in-process learns the end without reading the row again. Only a cache of
 * committed facts: a waiter that finds nothing here reads the row.
 */
export class TerminalCache {
  private readonly done = new Map<string, TerminalSnapshot>();

  constructor(
    private readonly wakers: Wakers,
    private readonly max = 10_000,
  ) {}

  /** Called after the terminal step was committed. */
  set(id: string, t: TerminalSnapshot): void {
    this.done.set(id, t);
    if (this.done.size > this.max) {
      const oldest = this.done.keys().next().value;
      if (oldest !== undefined) this.done.delete(oldest);
    }
    this.wakers.wake(`terminal:${id}`);
  }

  take(id: string): TerminalSnapshot | undefined {
    const t = this.done.get(id);
    if (t) this.done.delete(id);
    return t;
  }

  peek(id: string): TerminalSnapshot | undefined {
    return this.done.get(id);
  }
}
