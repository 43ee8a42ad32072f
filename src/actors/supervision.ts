// Restart policy for durable actors (DESIGN.md rule 4): a crashed actor is rebuilt from its row; after too many
// crashes within a window the supervisor stops it and the kind records a terminal failure instead of looping.

export interface RestartPolicy {
  /** Crashes tolerated within `windowMs` before giving up. */
  maxRestarts: number;
  windowMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = { maxRestarts: 3, windowMs: 60_000 };

export class CrashCounter {
  private readonly crashes = new Map<string, number[]>();

  constructor(private readonly policy: RestartPolicy = DEFAULT_RESTART_POLICY) {}

  /** Records a crash of `key` at `now` and answers whether it may restart once more. */
  recordCrash(key: string, now = Date.now()): boolean {
    const recent = (this.crashes.get(key) ?? []).filter((t) => now - t < this.policy.windowMs);
    recent.push(now);
    this.crashes.set(key, recent);
    return recent.length <= this.policy.maxRestarts;
  }

  forget(key: string): void {
    this.crashes.delete(key);
  }
}
