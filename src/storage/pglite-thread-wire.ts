// The messages between a node's main thread and the worker thread that runs its PGlite (pglite-thread.ts).
import type { MessagePort } from 'node:worker_threads';

/** What the worker is started with (workerData). */
export interface PgliteThreadData {
  /** PGlite's directory (`<dataDir>/pglite`). */
  dataDir: string;
  /** Bring it to this build's schema (openMigratedPglite); false: open it as it is (tests of the Db interface). */
  migrate: boolean;
  /** When given, the worker opens the database only once a message arrives here (the main thread's copy is done). */
  gate?: MessagePort;
}

/** Main thread → worker. `tx` names an open transaction (begun by a `begin` of that number). */
export type PgliteRequest =
  | { id: number; op: 'query'; sql: string; params?: readonly unknown[] | undefined; tx?: number | undefined }
  | { id: number; op: 'begin'; tx: number }
  | { id: number; op: 'end'; tx: number; commit: boolean }
  | { id: number; op: 'close' };

/** An error as it crosses the threads: message, name and the fields callers test (code, constraint, detail…). */
export interface WireError {
  message: string;
  name: string;
  props: Record<string, unknown>;
}

/** Worker → main thread. */
export type PgliteReply =
  | { kind: 'ready'; applied: number[] }
  | { kind: 'failed'; error: WireError }
  | { kind: 'log'; level: 'debug' | 'info' | 'warn' | 'error'; obj: unknown; msg: string }
  | { kind: 'result'; id: number; value: unknown }
  | { kind: 'error'; id: number; error: WireError };

export function toWireError(err: unknown): WireError {
  if (!(err instanceof Error)) return { message: String(err), name: 'Error', props: {} };
  const props: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(err)) {
    // Only what survives a structured clone (a DatabaseError's fields are strings and numbers).
    if (v === null || ['string', 'number', 'boolean', 'undefined'].includes(typeof v)) props[k] = v;
  }
  return { message: err.message, name: err.name, props };
}

/** The error again, on this side: an Error (this thread's stack) with the worker's message, name and fields. */
export function fromWireError(wire: WireError): Error {
  const err = new Error(wire.message);
  Object.assign(err, wire.props);
  if (wire.name !== 'Error') Object.defineProperty(err, 'name', { value: wire.name, configurable: true, writable: true });
  return err;
}
