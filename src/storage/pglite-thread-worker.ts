// The worker thread that runs a node's PGlite (see pglite-thread.ts for why): opens the database, then runs the
// main thread's statements and transactions one message at a time. PGlite's own mutex orders them exactly as it
// does in-process: a statement outside a transaction waits for the open one to end.
import { parentPort, workerData } from 'node:worker_threads';
import type { Logger } from '../logging/logger.ts';
import type { Db, Queryable } from './db.ts';
import { migrate } from './migrate.ts';
import { openMigratedPglite } from './open.ts';
import { preloadPgliteAssets } from './pglite-assets.ts';
import { toWireError, type PgliteReply, type PgliteRequest, type PgliteThreadData } from './pglite-thread-wire.ts';

const port = parentPort!;
const data = workerData as PgliteThreadData;
const send = (reply: PgliteReply): void => port.postMessage(reply);

/** migrate()'s log lines, sent to the main thread's logger (the node's, with its bindings). */
function forwardingLogger(): Logger {
  const at =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (obj: unknown, msg?: string): void => {
      // An Error inside obj (migrate logs { err }) does not survive a clone with its fields; its message does.
      const plain = obj && typeof obj === 'object' && 'err' in obj ? { ...obj, err: toWireError((obj as { err: unknown }).err) } : obj;
      send({ kind: 'log', level, obj: plain, msg: msg ?? '' });
    };
  // migrate() uses only these four levels; the rest of pino's interface is never called here.
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger;
}

/** An open transaction: its Queryable, and how the main thread ends it. */
interface OpenTx {
  q: Queryable;
  end(commit: boolean): void;
}

const ROLLED_BACK = new Error('rolled back by the main thread');

let closing = false;
let warming: Promise<void> = Promise.resolve();

/**
 * Once ready, the tables' catalog entries are loaded ahead (a statement per table that reads no row; planning it
 * opens the table and its indexes). A fresh backend otherwise loads them in each table's first statement, in
 * WebAssembly that V8 has not optimised yet: at a node's start those first statements (its own row, the recovery
 * of each actor kind) came one after another while the main thread waited (in a profile at load ~7, ~0.5 s of the
 * worker's work after the open). Done here while the main thread is still building the node; a statement of the
 * main thread's waits at most for one of these.
 */
async function warmCatalog(db: Db): Promise<void> {
  const { rows } = await db.query<{ t: string }>("SELECT quote_ident(tablename) AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename");
  for (const { t } of rows) {
    if (closing) return;
    await db.query(`SELECT * FROM ${t} LIMIT 0`);
  }
}

/** Each open transaction's settling (its COMMIT or ROLLBACK), awaited by its `end`. */
const ends = new Map<number, Promise<unknown>>();

async function serve(db: Db): Promise<void> {
  const txs = new Map<number, OpenTx>();
  const answer = (id: number, work: Promise<unknown>): void => {
    work.then(
      (value) => send({ kind: 'result', id, value }),
      (err: unknown) => send({ kind: 'error', id, error: toWireError(err) }),
    );
  };
  port.on('message', (req: PgliteRequest) => {
    switch (req.op) {
      case 'query': {
        const target = req.tx === undefined ? db : txs.get(req.tx)?.q;
        answer(req.id, target ? target.query(req.sql, req.params) : Promise.reject(new Error(`no open transaction ${req.tx}`)));
        return;
      }
      case 'begin': {
        // Answered once inside PGlite's transaction (its BEGIN ran); the transaction's own settling answers `end`.
        let began!: () => void;
        const inside = new Promise<void>((resolve) => (began = resolve));
        const done = db.tx(
          (q) =>
            new Promise<void>((resolve, reject) => {
              txs.set(req.tx, { q, end: (commit) => (commit ? resolve() : reject(ROLLED_BACK)) });
              began();
            }),
        );
        // Settled: forgotten (a BEGIN that failed is answered below and never ended).
        const forget = (): void => {
          txs.delete(req.tx);
          ends.delete(req.tx);
        };
        done.then(forget, forget);
        ends.set(req.tx, done);
        answer(req.id, Promise.race([inside, done]));
        return;
      }
      case 'end': {
        const tx = txs.get(req.tx);
        const done = ends.get(req.tx);
        ends.delete(req.tx);
        if (!tx || !done) {
          answer(req.id, Promise.reject(new Error(`no open transaction ${req.tx}`)));
          return;
        }
        tx.end(req.commit);
        // A rollback asked for is a success; a failed COMMIT is the caller's error.
        answer(req.id, req.commit ? done : done.catch((err: unknown) => (err === ROLLED_BACK ? undefined : Promise.reject(err))));
        return;
      }
      case 'close':
        closing = true;
        answer(req.id, warming.then(() => db.close()));
        return;
    }
  });
}

try {
  // While the main thread copies the schema template into a fresh directory (beginPgliteThread): PGlite's files
  // read and compiled, its code loaded. Then the copy is awaited.
  preloadPgliteAssets();
  const loading = import('./pglite.ts');
  // Its failure is awaited (and reported) below, after the copy.
  loading.catch(() => undefined);
  if (data.gate) await new Promise((resolve) => data.gate!.once('message', resolve));
  await loading;
  data.gate?.close();
  let applied: number[] = [];
  const db = data.migrate
    ? await openMigratedPglite(data.dataDir, async (d) => (applied = await migrate(d, forwardingLogger())))
    : await (await import('./pglite.ts')).openPglite(data.dataDir);
  await serve(db);
  send({ kind: 'ready', applied });
  if (data.migrate) warming = warmCatalog(db).catch(() => undefined);
} catch (err) {
  send({ kind: 'failed', error: toWireError(err) });
}
