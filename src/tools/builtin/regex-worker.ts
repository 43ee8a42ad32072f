// User-supplied regular expressions run off the main thread under a watchdog. V8's engine backtracks: `(a+)+$` over
// a 29-byte line took 13.4 s, and on the main thread that froze the whole node (/health included). Here the match
// loop runs in a worker thread that bumps a shared counter after every line; the main thread terminates the worker
// when the counter has not moved for `lineBudgetMs` (one line took too long) or the whole search passed `totalMs`,
// and the caller gets a clear error. The pattern itself runs on RE2's linear-time engine (re2js, see
// src/util/linear-regexp.ts), so `(a+)+$` or `(a|aa)+$` answer in time linear in the line; the worker and its
// watchdog stay as a second line of defence (a huge line, an engine bug) and keep the match off the event loop.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** The CommonJS build of re2js, which the eval'd worker loads by absolute path (it has no module resolution of its
 * own). */
const RE2JS_PATH = createRequire(import.meta.url).resolve('re2js');

export interface GrepFile {
  /** Where to read it on this host. */
  host: string;
  /** How the result names it (the sandbox path). */
  shown: string;
}

export interface GrepLimits {
  maxMatches: number;
  maxFileBytes: number;
  /** Longest time one line may take (the watchdog's stall limit). */
  lineBudgetMs: number;
  /** Longest time the whole search may take, worker start included. */
  totalMs: number;
}

export const GREP_LIMITS: GrepLimits = { maxMatches: 1000, maxFileBytes: 5 * 1024 * 1024, lineBudgetMs: 400, totalMs: 30_000 };

export { MAX_PATTERN_LENGTH } from '../../util/linear-regexp.ts';

export type GrepResult = { ok: true; lines: string[]; truncated: boolean } | { ok: false; reason: 'line_budget' | 'total_budget' | 'failed'; message: string };

// Plain JavaScript, run with `eval: true` so no TypeScript loader is needed in the worker. It reads each file (binary
// files, with a NUL byte, are skipped), matches line by line and bumps progress[0] after each line.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { pattern, files, maxMatches, maxFileBytes, progress, re2jsPath } = workerData;
const { RE2JS } = require(re2jsPath);
const ticks = new Int32Array(progress);
const re = RE2JS.compile(RE2JS.translateRegExp(pattern));
const lines = [];
let truncated = false;
Atomics.add(ticks, 0, 1);
outer: for (const f of files) {
  let buf;
  try {
    if (fs.statSync(f.host).size > maxFileBytes) continue;
    buf = fs.readFileSync(f.host);
  } catch { continue; }
  if (buf.includes(0)) continue;
  const text = buf.toString('utf8').split('\\n');
  for (let i = 0; i < text.length; i++) {
    const matched = re.test(text[i]);
    Atomics.add(ticks, 0, 1);
    if (!matched) continue;
    if (lines.length >= maxMatches) { truncated = true; break outer; }
    lines.push(f.shown + ':' + (i + 1) + ': ' + text[i]);
  }
  Atomics.add(ticks, 0, 1);
}
parentPort.postMessage({ lines, truncated });
`;

/** Searches `files` for `pattern` (already known to compile with linearRegExp) in a worker; never blocks the event
 * loop. */
export function grepInWorker(pattern: string, files: GrepFile[], limits: GrepLimits = GREP_LIMITS): Promise<GrepResult> {
  return new Promise((resolve) => {
    const progress = new SharedArrayBuffer(4);
    const ticks = new Int32Array(progress);
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { pattern, files, maxMatches: limits.maxMatches, maxFileBytes: limits.maxFileBytes, progress, re2jsPath: RE2JS_PATH },
      // A pattern or a file that wants more memory ends the worker, not the node.
      resourceLimits: { maxOldGenerationSizeMb: 128, maxYoungGenerationSizeMb: 32 },
    });
    const started = Date.now();
    let seen = 0;
    let movedAt = Date.now();
    let done = false;
    const finish = (r: GrepResult): void => {
      if (done) return;
      done = true;
      clearInterval(watchdog);
      // A worker that cannot be terminated has exited already: nothing is left to stop.
      worker.terminate().catch(() => undefined);
      resolve(r);
    };
    const step = Math.max(10, Math.min(100, Math.floor(limits.lineBudgetMs / 5)));
    const watchdog = setInterval(() => {
      const now = Date.now();
      const count = Atomics.load(ticks, 0);
      if (count !== seen) {
        seen = count;
        movedAt = now;
      } else if (count > 0 && now - movedAt > limits.lineBudgetMs) {
        finish({ ok: false, reason: 'line_budget', message: `the regular expression took more than ${limits.lineBudgetMs} ms on one line; search stopped` });
        return;
      }
      if (now - started > limits.totalMs) {
        finish({ ok: false, reason: 'total_budget', message: `the search took more than ${limits.totalMs} ms; stopped` });
      }
    }, step);
    worker.once('message', (m: { lines: string[]; truncated: boolean }) => finish({ ok: true, lines: m.lines, truncated: m.truncated }));
    worker.once('error', (err) => finish({ ok: false, reason: 'failed', message: `search failed: ${err.message}` }));
    worker.once('exit', (code) => finish({ ok: false, reason: 'failed', message: `search ended early (worker exit ${code})` }));
  });
}
