// Restart policy for durable actors (DESIGN.md rule 4): a crashed actor is rebuilt from its row after a backoff
// (capped exponential, jittered), so a dependency that is down is not hammered and a crash loop costs little.
// Giving up is measured in time, and only crashes that are NOT outages count: an actor that keeps failing with a
// bug or bad data for `giveUpAfterMs` is stopped and its kind records a terminal failure, while one that fails
// because PostgreSQL or Redis is down is restarted for as long as the outage lasts (issue 20: a 5 s database
// outage made actors crash three times in 150 ms and give up for good).
import { isOutage } from '../errors/outage.ts';
import { backoffDelay } from '../util/backoff.ts';

export interface RestartPolicy {
  /** Delay before the first restart of a streak; each further crash doubles it, up to maxDelayMs (with jitter). */
  baseDelayMs: number;
  maxDelayMs: number;
  /**
   * The cap while the crashes are outages: short, so that an actor notices a returning database within about this
   * long (a retry against a server that is down costs one refused connection).
   */
  maxOutageDelayMs: number;
  /** Give up when crashes that are not outages have kept coming for this long. */
  giveUpAfterMs: number;
  /** A run this long without a crash ends the streak: the next crash starts again at baseDelayMs. */
  stableAfterMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = { baseDelayMs: 100, maxDelayMs: 10_000, maxOutageDelayMs: 2_000, giveUpAfterMs: 60_000, stableAfterMs: 30_000 };

export type CrashVerdict =
  | { action: 'restart'; delayMs: number; outage: boolean; crashes: number }
  | { action: 'give-up'; crashes: number; failingForMs: number };

interface Streak {
  crashes: number;
  lastCrash: number;
  /** When the current run of non-outage crashes began; undefined while the crashes are outages. */
  failingSince: number | undefined;
}

export class CrashCounter {
  private readonly streaks = new Map<string, Streak>();

  constructor(private readonly policy: RestartPolicy = DEFAULT_RESTART_POLICY) {}

  /** Records a crash of `key` with `err` at `now` and answers whether to restart it (after how long) or give up. */
  recordCrash(key: string, err: unknown, now = Date.now()): CrashVerdict {
    const previous = this.streaks.get(key);
    const streak: Streak =
      previous && now - previous.lastCrash < this.policy.stableAfterMs
        ? previous
        : { crashes: 0, lastCrash: now, failingSince: undefined };
    streak.crashes++;
    streak.lastCrash = now;
    const outage = isOutage(err);
    // An outage also ends a run of other failures: those may well have been the outage's doing.
    if (outage) streak.failingSince = undefined;
    else streak.failingSince ??= now;
    this.streaks.set(key, streak);
    if (!outage && now - streak.failingSince! >= this.policy.giveUpAfterMs) {
      return { action: 'give-up', crashes: streak.crashes, failingForMs: now - streak.failingSince! };
    }
    const delayMs = backoffDelay(streak.crashes, { baseMs: this.policy.baseDelayMs, capMs: outage ? this.policy.maxOutageDelayMs : this.policy.maxDelayMs });
    return { action: 'restart', delayMs, outage, crashes: streak.crashes };
  }

  forget(key: string): void {
    this.streaks.delete(key);
  }
}
