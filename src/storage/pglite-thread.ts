// A node's PGlite in a worker thread. PGlite is PostgreSQL compiled to WebAssembly: in-process, its start (the
// backend's boot, the first queries loading the catalog in not-yet-optimised WebAssembly) ran on the thread that was
// also loading the node's modules and building its HTTP app, ~1 s of a ~3 s start on a quiet machine, and later every
// statement's planning and execution shared that thread with the requests (issue 15 item 4: start-up). In a worker
// it starts on the other core while the node loads, and the Db below sends each statement there.
//
// Same behaviour as the in-process adapter (pglite.ts), which the worker runs: one connection, transactions one
// after another under PGlite's mutex, a query outside a transaction waits for it, the same rows and row counts (the
// values cross by structured clone: Date, Uint8Array, JSON values and strings survive as they are), the same error
// fields (code, constraint, detail…). The retry of a transaction on 40001 runs here, around the caller's function.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { mkdir } from 'node:fs/promises';
import { MessageChannel, Worker } from 'node:worker_threads';
import type { Logger } from '../logging/logger.ts';
import type { Db, QueryResult, Queryable, Row, TxOptions } from './db.ts';
import { listMigrations } from './migration-files.ts';
import { copySchemaDir, isFreshDataDir, schemaKey } from './pglite-template.ts';
import { oneStatement } from './one-statement.ts';
import { withTxRetry } from './retry.ts';
import { DependencyUnavailable } from '../errors/outage.ts';
import { backoffDelay, OUTAGE_BACKOFF } from '../util/backoff.ts';
import { fromWireError, type PgliteReply, type PgliteRequest, type PgliteThreadData, type WireError } from './pglite-thread-wire.ts';

type Pending = { resolve(value: unknown): void; reject(err: Error): void };
type Request = PgliteRequest extends infer R ? (R extends PgliteRequest ? Omit<R, 'id'> : never) : never;

/**
 * The worker's code: the bundle's entry when the build made one (scripts/bundle.mjs), else the file beside this
 * one; from the sources (tsx), a bootstrap that registers tsx in the worker first (hooks are per thread).
 */
function workerOf(data: PgliteThreadData): Worker {
  const here = import.meta.url;
  const options = { workerData: data, transferList: data.gate ? [data.gate] : [] };
  if (here.endsWith('.ts')) {
    const file = new URL('./pglite-thread-worker.ts', here).href;
    const tsx = import.meta.resolve('tsx/esm/api');
    const boot = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(file)}); })`;
    return new Worker(boot, { ...options, eval: true });
  }
  const bundled = new URL('../bundle/storage/pglite-thread-worker.js', here);
  return new Worker(existsSync(fileURLToPath(bundled)) ? bundled : new URL('./pglite-thread-worker.js', here), options);
}

class PgliteThreadDb implements Db {
  readonly kind = 'pglite' as const;
  private nextId = 1;
  private nextTx = 1;
  /** Transactions numbered below this were begun on a worker that has since died. */
  private txFloor = 1;
  private readonly pending = new Map<number, Pending>();
  /** Set when the first open failed, or once closed: every later call fails with it. */
  private gone: Error | undefined;
  /** Set while a worker that died is being replaced: calls fail with it (an outage: callers wait it out). */
  private down: Error | undefined;
  private closed = false;

  constructor(public worker: Worker) {}

  /** The worker's answer to request `id` (and its exit, which fails whatever is still waiting). */
  settle(reply: Extract<PgliteReply, { id: number }>): void {
    const p = this.pending.get(reply.id);
    if (!p) return;
    this.pending.delete(reply.id);
    if (reply.kind === 'result') p.resolve(reply.value);
    else p.reject(fromWireError(reply.error));
  }

  /** For good: the first open failed, or the Db was closed. */
  fail(err: Error): void {
    this.gone ??= err;
    this.rejectPending(err);
  }

  /**
   * The worker died after the database was open (PostgreSQL's process, in PGlite's case a thread, went away): what
   * waited on it fails as an outage, open transactions are lost (rolled back: PGlite had not committed them), and
   * calls fail the same way until `replaced` brings a new worker on the same directory.
   */
  lost(err: DependencyUnavailable): void {
    this.down = err;
    this.txFloor = this.nextTx;
    this.rejectPending(err);
  }

  /** A new worker for the same directory: calls go to it (they wait there until it has opened). */
  replaced(worker: Worker): void {
    this.worker = worker;
    this.down = undefined;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private rejectPending(err: Error): void {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  private call<T>(req: Request): Promise<T> {
    if (this.gone) return Promise.reject(this.gone);
    if (this.down) return Promise.reject(this.down);
    if ('tx' in req && req.tx !== undefined && req.tx < this.txFloor) {
      return Promise.reject(new DependencyUnavailable('database', `transaction ${req.tx} was lost with the PGlite worker thread that ran it`));
    }
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ ...req, id });
    });
  }

  private queryable(tx?: number): Queryable {
    return {
      query: <R extends object = Row>(sql: string, params?: readonly unknown[]) => this.call<QueryResult<R>>({ op: 'query', sql, params, tx }),
    };
  }

  query<R extends object = Row>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
    return this.call<QueryResult<R>>({ op: 'query', sql, params });
  }

  tx<T>(fn: (tx: Queryable) => Promise<T>, options?: TxOptions): Promise<T> {
    // As pglite.ts: one statement needs no BEGIN and COMMIT (TxOptions.oneStatement); a second one is refused.
    if (options?.oneStatement) return withTxRetry(() => fn(oneStatement(this.queryable())));
    return withTxRetry(async () => {
      const tx = this.nextTx++;
      await this.call({ op: 'begin', tx });
      let result: T;
      try {
        result = await fn(this.queryable(tx));
      } catch (err) {
        await this.call({ op: 'end', tx, commit: false }).catch(() => undefined);
        throw err;
      }
      await this.call({ op: 'end', tx, commit: true });
      return result;
    });
  }

  async ping(): Promise<boolean> {
    try {
      await this.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      if (!this.gone && !this.down) await this.call({ op: 'close' });
    } finally {
      this.fail(new Error('the database is closed'));
      await this.worker.terminate();
    }
  }
}

export interface PgliteThreadOptions {
  /** Bring the database to this build's schema (default true); false opens it as it is. */
  migrate?: boolean;
  /** Where the worker's log lines (the migrations') go. */
  logger?: Logger;
}

/** A worker begun: its Db, its readiness, and its log lines held until a logger is given. */
interface Started {
  data: PgliteThreadData;
  worker: Worker;
  db: PgliteThreadDb;
  ready: Promise<number[]>;
  setLogger(logger: Logger | undefined): void;
}

/** Starts the worker; it opens the database at once, whether or not anyone awaits it yet. */
function start(data: PgliteThreadData): Started {
  const db = new PgliteThreadDb(workerOf(data));
  let logger: Logger | undefined;
  let held: Extract<PgliteReply, { kind: 'log' }>[] | undefined = [];
  const log = (reply: Extract<PgliteReply, { kind: 'log' }>): void => {
    if (held) held.push(reply);
    else logger?.[reply.level](reply.obj as object, reply.msg);
  };
  let isReady = false;
  let deaths = 0;
  /**
   * A worker that dies once the database was open (a WebAssembly abort, the thread's heap exhausted) is replaced on
   * the same directory after a capped backoff, as a PostgreSQL server that restarts: meanwhile every call fails as an
   * outage, which request paths answer 503 and background work waits out (DESIGN: dependencies fail; before, in
   * process, such a death took the node down with it).
   */
  const handled = new WeakSet<Worker>();
  const died = (worker: Worker, err: Error): void => {
    // Once per worker (its 'error' is followed by its 'exit'), and only for the one calls go to.
    if (handled.has(worker) || db.worker !== worker || db.isClosed) return;
    handled.add(worker);
    void worker.terminate().catch(() => undefined);
    const delay = backoffDelay(++deaths, OUTAGE_BACKOFF);
    logger?.error({ err, restartInMs: delay }, 'the PGlite worker thread died; starting another on the same directory');
    db.lost(new DependencyUnavailable('database', `the PGlite worker thread died: ${err.message}`, { cause: err }));
    const again = setTimeout(() => {
      if (db.isClosed) return;
      const next = workerOf({ dataDir: data.dataDir, migrate: false });
      watch(next);
      db.replaced(next);
    }, delay);
    again.unref();
  };
  let readyOnce!: { resolve(applied: number[]): void; reject(err: Error): void };
  const ready = new Promise<number[]>((resolve, reject) => (readyOnce = { resolve, reject }));
  const watch = (worker: Worker): void => {
    const failed = (err: Error): void => {
      if (isReady) died(worker, err);
      else if (db.worker === worker) {
        db.fail(err);
        readyOnce.reject(err);
      }
    };
    // Listened to from the start: a reply with no listener would be lost.
    worker.on('message', (reply: PgliteReply) => {
      switch (reply.kind) {
        case 'ready':
          if (isReady) deaths = 0; // a replacement opened: the next death starts the backoff again
          isReady = true;
          readyOnce.resolve(reply.applied);
          return;
        case 'failed':
          void worker.terminate().catch(() => undefined);
          failed(fromWireError(reply.error as WireError));
          return;
        case 'log':
          log(reply);
          return;
        default:
          if (db.worker === worker) db.settle(reply);
      }
    });
    worker.on('error', (err) => failed(err));
    worker.on('exit', (code) => failed(new Error(`the PGlite worker thread exited (code ${code})`)));
  };
  watch(db.worker);
  // Held until awaited: a failure before then is the awaiting caller's to report.
  ready.catch(() => undefined);
  return {
    data,
    get worker() {
      return db.worker;
    },
    db,
    ready,
    setLogger(l) {
      logger = l;
      const lines = held ?? [];
      held = undefined;
      for (const line of lines) logger?.[line.level](line.obj as object, line.msg);
    },
  };
}

/** The thread a PGlite Db of this module runs on (tests kill it to see the Db through the loss), else undefined. */
export function pgliteWorkerOf(db: Db): Worker | undefined {
  return db instanceof PgliteThreadDb ? db.worker : undefined;
}

let begun: Started | undefined;

/**
 * Begins opening the node's PGlite in `dataDir` now (`orch up` calls it as soon as its config is read, before it
 * loads the logger and the node): the worker's own start (a Node.js thread, PGlite's code, its WebAssembly) then
 * overlaps that loading too. openPgliteThread of the same directory takes it over.
 */
export function beginPgliteThread(dataDir: string): void {
  if (begun) return;
  // A fresh directory gets its copy of the schema template (a `cp -r` child, as openPglite would make it) from here,
  // at once, while the worker thread boots and loads PGlite; the worker opens the database once it is done.
  const gate = new MessageChannel();
  begun = start({ dataDir, migrate: true, gate: gate.port2 });
  const copy = async (): Promise<void> => {
    if (!isFreshDataDir(dataDir)) return;
    await mkdir(dataDir, { recursive: true });
    await copySchemaDir(undefined, await schemaKey(await listMigrations()), dataDir);
  };
  // Whatever the copy did (a failed one leaves the directory empty), the worker then opens as openPglite does.
  const go = (): void => {
    gate.port1.postMessage('go');
    gate.port1.close();
  };
  void copy().then(go, go);
  // Until openPgliteThread takes it over, it does not keep the process alive (a start that fails first exits).
  begun.worker.unref();
}

/**
 * The Db of the worker begun for `dataDir` (beginPgliteThread), before it is open: its statements wait in the worker
 * until the database is ready (migrated), and fail with the open's error if it fails. The same object
 * openPgliteThread of that directory then resolves with. startNode builds the node with it while PGlite starts.
 */
export function begunPgliteDb(dataDir: string): Db | undefined {
  return begun && begun.data.dataDir === dataDir ? begun.db : undefined;
}

/**
 * Opens PGlite in `dataDir` on a worker thread (from the schema template when the directory is fresh, as
 * openMigratedPglite) and resolves once it is ready, with the migrations it applied; rejects with the worker's
 * error when it could not open.
 */
export async function openPgliteThread(dataDir: string, options: PgliteThreadOptions = {}): Promise<{ db: Db; applied: number[] }> {
  const migrate = options.migrate ?? true;
  let started: Started;
  if (begun && begun.data.dataDir === dataDir && migrate) {
    started = begun;
    begun = undefined;
    started.worker.ref();
  } else {
    started = start({ dataDir, migrate });
  }
  started.setLogger(options.logger);
  return { db: started.db, applied: await started.ready };
}
