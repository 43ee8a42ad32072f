// What a durable actor kind is: a behaviour over one database row, plus how to find the rows to recover.
// The row is the truth (DESIGN.md rule 1); an actor instance is a cache of it plus its timers.

/** Every message an actor receives has a `type`; `$recover` is sent by the runtime after spawn and restart. */
export interface ActorMessage {
  type: string;
}

export const RECOVER = '$recover' as const;

/** What a behaviour may do to its own actor. */
export interface ActorHandle<Msg extends ActorMessage> {
  readonly kind: string;
  readonly key: string;
  /** Sends `msg` to this actor after `delayMs`; cancelled when the actor stops or restarts. */
  schedule(delayMs: number, msg: Msg): void;
  /** Stops this actor (its row should be terminal by then). */
  stop(): void;
}

/** One live actor's logic. Instances are thrown away on restart and rebuilt from the row by `recover`. */
export interface Behaviour<Msg extends ActorMessage> {
  /** Loads the row and resumes from it: re-arms timers, repeats an interrupted step. */
  recover(): Promise<void>;
  handle(msg: Msg): Promise<void>;
  /** Called when the runtime shuts down gracefully (not on crash). */
  shutdown?(): Promise<void>;
}

export interface ActorKind<Msg extends ActorMessage> {
  readonly name: string;
  /** Keys of the non-terminal rows this node should run actors for after a (re)start. */
  recoverableKeys(): Promise<string[]>;
  create(handle: ActorHandle<Msg>): Behaviour<Msg>;
  /** The supervisor gave up after repeated crashes: record a terminal failure with `reason` on the row. */
  giveUp(key: string, reason: string): Promise<void>;
}

/**
 * Thrown by an actor's work when it parked itself durably (its row says so, e.g. a workflow run waiting on a person):
 * the actor leaves memory quietly; a message to its key, or its deadline, brings it back from the row.
 */
export class Passivated extends Error {
  constructor() {
    super('parked');
    this.name = 'Passivated';
  }
}
