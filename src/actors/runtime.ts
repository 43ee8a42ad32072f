// Our small interface over nact. The tree is: system → one supervisor actor per kind → one actor per row key.
// Callers never see nact types; they tell and ask by (kind, key).
import nact from 'nact';
import type { Ref } from 'nact';
import type { Logger } from '../logging/logger.ts';
import { RECOVER, type ActorHandle, type ActorKind, type ActorMessage, type Behaviour } from './kind.ts';
import { CrashCounter, DEFAULT_RESTART_POLICY, type RestartPolicy } from './supervision.ts';
import { retryThroughOutage } from '../storage/outage-retry.ts';

const SHUTDOWN = '$shutdown';
interface ShutdownMessage extends ActorMessage {
  done: () => void;
}

interface ActorState<Msg extends ActorMessage> {
  behaviour?: Behaviour<Msg>;
}

interface LiveActor {
  ref: Ref<ActorMessage>;
  timers: Set<NodeJS.Timeout>;
  stopped: boolean;
  /** Messages that arrived between a crash and the end of the next recovery; handed over once it recovered. */
  early: ActorMessage[];
  /** The last crash was an outage: a successful recovery now means the dependency is back. */
  inOutage: boolean;
}

/** Restarts woken by a dependency's return are spread over this long, so they do not all hit it at once. */
const WAKE_SPREAD_MS = 200;

/** Early messages kept per actor while it waits out a restart; beyond that they are dropped (and logged). */
const MAX_EARLY_MESSAGES = 1000;

export class ActorRuntime {
  private readonly system: Ref<never>;
  private readonly supervisors = new Map<string, Ref<never>>();
  private readonly kinds = new Map<string, ActorKind<ActorMessage>>();
  private readonly live = new Map<string, LiveActor>();
  private readonly crashes: CrashCounter;
  private closing = false;
  /** Aborted at shutdown: ends the retrying of give-up records through an outage. */
  private readonly closed = new AbortController();
  /**
   * Restarts waiting out an outage, by actor id. The first actor that recovers after an outage has shown the
   * dependency is back, so the others are restarted then (spread over a moment) instead of each waiting for the
   * rest of its own backoff.
   */
  private readonly outageRestarts = new Map<string, () => void>();

  constructor(
    private readonly logger: Logger,
    name = 'orch',
    policy: RestartPolicy = DEFAULT_RESTART_POLICY,
  ) {
    this.system = nact.start(name) as Ref<never>;
    this.crashes = new CrashCounter(policy);
  }

  register<Msg extends ActorMessage>(kind: ActorKind<Msg>): void {
    if (this.kinds.has(kind.name)) throw new Error(`actor kind ${kind.name} registered twice`);
    this.kinds.set(kind.name, kind as unknown as ActorKind<ActorMessage>);
    // The kind's supervisor only parents its children; faults are handled by each child's onCrash below.
    const supervisor = nact.spawnStateless(this.system, () => undefined, kind.name) as Ref<never>;
    this.supervisors.set(kind.name, supervisor);
  }

  /** Spawns the actor for (kind, key) unless it runs already, and sends it `$recover`. */
  spawn(kindName: string, key: string): void {
    const id = `${kindName}/${key}`;
    if (this.closing || this.live.has(id)) return;
    const kind = this.kinds.get(kindName);
    const supervisor = this.supervisors.get(kindName);
    if (!kind || !supervisor) throw new Error(`unknown actor kind ${kindName}`);
    // The actor's child logger, made on first use (only faults log here; a pino child costs its bindings' redaction).
    let actorLog: Logger | undefined;
    const log = (): Logger => (actorLog ??= this.logger.child({ actor: kindName, key }));
    const entry: LiveActor = { ref: undefined as unknown as Ref<ActorMessage>, timers: new Set(), stopped: false, early: [], inOutage: false };
    const clearTimers = (): void => {
      for (const t of entry.timers) clearTimeout(t);
      entry.timers.clear();
    };
    const handle: ActorHandle<ActorMessage> = {
      kind: kindName,
      key,
      schedule: (delayMs, msg) => {
        if (entry.stopped) return;
        const timer = setTimeout(() => {
          entry.timers.delete(timer);
          if (!entry.stopped) nact.dispatch(entry.ref, msg);
        }, Math.max(0, delayMs));
        timer.unref();
        entry.timers.add(timer);
      },
      stop: () => this.stopActor(id),
    };

    entry.ref = nact.spawn(
      supervisor,
      async (state: ActorState<ActorMessage>, msg: ActorMessage): Promise<ActorState<ActorMessage>> => {
        if (msg.type === RECOVER) {
          clearTimers();
          const behaviour = kind.create(handle);
          await behaviour.recover();
          if (entry.inOutage) {
            entry.inOutage = false;
            this.wakeOutageRestarts();
          }
          // What came in while the actor was down goes to the recovered behaviour, in the order it arrived.
          for (const early of entry.early.splice(0)) nact.dispatch(entry.ref, early);
          return { behaviour };
        }
        if (msg.type === SHUTDOWN) {
          try {
            await state.behaviour?.shutdown?.();
          } catch (err) {
            log().error({ err }, 'shutdown step failed');
          }
          (msg as ShutdownMessage).done();
          return state;
        }
        if (!state.behaviour) {
          // Between a crash and the (backed-off) recovery: kept for the recovered behaviour.
          if (entry.early.length < MAX_EARLY_MESSAGES) entry.early.push(msg);
          else log().warn({ msg: msg.type }, 'message before recovery; too many waiting, dropped');
          return state;
        }
        await state.behaviour.handle(msg);
        return state;
      },
      key.replace(/[^A-Za-z0-9_-]/g, '_'),
      {
        initialState: {},
        onCrash: (_msg, err, ctx) => {
          clearTimers();
          if (this.closing) return ctx.stop;
          const verdict = this.crashes.recordCrash(id, err);
          if (verdict.action === 'restart') {
            // The first crash of a streak at warn; the rest of an outage at debug, so a long outage does not flood.
            const level = verdict.crashes === 1 || !verdict.outage ? 'warn' : 'debug';
            log()[level]({ err, delayMs: verdict.delayMs, crashes: verdict.crashes, outage: verdict.outage }, 'actor crashed; restarting from its row after a backoff');
            entry.inOutage = verdict.outage;
            let restarted = false;
            // Once only: the backoff timer and a wake-up (the dependency is back) may both call it.
            const restart = (): void => {
              if (restarted) return;
              restarted = true;
              clearTimeout(timer);
              entry.timers.delete(timer);
              this.outageRestarts.delete(id);
              if (!entry.stopped) nact.dispatch(entry.ref, { type: RECOVER });
            };
            const timer = setTimeout(restart, verdict.delayMs);
            timer.unref();
            entry.timers.add(timer);
            if (verdict.outage) this.outageRestarts.set(id, restart);
            return ctx.reset;
          }
          log().error({ err, crashes: verdict.crashes, failingForMs: verdict.failingForMs }, 'actor crashed repeatedly; giving up');
          entry.stopped = true;
          entry.early.length = 0;
          this.live.delete(id);
          this.crashes.forget(id);
          const reason = `actor crashed ${verdict.crashes} times in ${Math.round(verdict.failingForMs / 1000)} s: ${err?.message ?? 'unknown error'}`;
          // Recording the failure is a database write: waited out through an outage, until shutdown.
          retryThroughOutage(() => kind.giveUp(key, reason), { signal: this.closed.signal, logger: log(), what: 'record give-up' })
            .catch((e: unknown) => log().error({ err: e }, 'recording give-up failed'));
          return ctx.stop;
        },
      },
    ) as Ref<ActorMessage>;
    this.live.set(id, entry);
    nact.dispatch(entry.ref, { type: RECOVER });
  }

  /** The dependency is back: every actor waiting out the outage restarts within WAKE_SPREAD_MS, not all at once. */
  private wakeOutageRestarts(): void {
    const waiting = [...this.outageRestarts.values()];
    this.outageRestarts.clear();
    for (const restart of waiting) setTimeout(restart, Math.random() * WAKE_SPREAD_MS).unref();
  }

  tell(kindName: string, key: string, msg: ActorMessage): boolean {
    const entry = this.live.get(`${kindName}/${key}`);
    if (!entry || entry.stopped) return false;
    nact.dispatch(entry.ref, msg);
    return true;
  }

  /** Sends a message built around a reply function and waits for the actor to call it. */
  async ask<R>(kindName: string, key: string, build: (reply: (r: R) => void) => ActorMessage, timeoutMs = 5000): Promise<R> {
    const entry = this.live.get(`${kindName}/${key}`);
    if (!entry || entry.stopped) throw new Error(`no live actor ${kindName}/${key}`);
    return new Promise<R>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`ask ${kindName}/${key} timed out`)), timeoutMs);
      nact.dispatch(entry.ref, build((r) => {
        clearTimeout(timer);
        resolve(r);
      }));
    });
  }

  isLive(kindName: string, key: string): boolean {
    return this.live.has(`${kindName}/${key}`);
  }

  liveKeys(kindName: string): string[] {
    const prefix = `${kindName}/`;
    return [...this.live.keys()].filter((id) => id.startsWith(prefix)).map((id) => id.slice(prefix.length));
  }

  private stopActor(id: string): void {
    const entry = this.live.get(id);
    if (!entry) return;
    entry.stopped = true;
    for (const t of entry.timers) clearTimeout(t);
    this.live.delete(id);
    this.crashes.forget(id);
    this.outageRestarts.delete(id);
    nact.stop(entry.ref);
  }

  /**
   * Graceful stop: each live actor's behaviour gets `shutdown` as a message, so it runs after any message in
   * progress, then the system stops. Rows stay as they are; the next start recovers them.
   */
  async shutdown(timeoutMs = 5000): Promise<void> {
    this.closing = true;
    this.closed.abort();
    const waits = [...this.live.entries()].map(async ([id, entry]) => {
      for (const t of entry.timers) clearTimeout(t);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        const msg: ShutdownMessage = { type: SHUTDOWN, done: () => { clearTimeout(timer); resolve(); } };
        nact.dispatch(entry.ref, msg);
      });
      this.stopActor(id);
    });
    await Promise.all(waits);
    nact.stop(this.system);
  }
}
