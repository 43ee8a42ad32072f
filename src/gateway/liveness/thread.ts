// /health/live on a port of its own, answered by a worker thread (issue 24): a liveness probe on the main HTTP port
// waits behind whatever the main event loop is doing — under a burst of 100 execution starts one waited ~1 s — and a
// probe that times out gets a healthy, busy node killed. The worker has its own event loop, so it answers in
// milliseconds however busy the main thread is; it reads the main loop's health from a heartbeat in shared memory,
// so a main loop that has not turned for `stallMs` still reads as not live (docs/CONFIG.md "Health port").
// Node 20 has no SO_REUSEPORT in `net`, so the worker cannot share the main port: it listens on `http.health_port`.
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../logging/logger.ts';
import { LIVENESS_WORKER_SOURCE } from './worker-source.ts';

export interface LivenessThreadOptions {
  host: string;
  port: number;
  /** The main loop beats this often. */
  beatMs?: number;
  /** A main loop silent longer than this is reported not live (503). */
  stallMs: number;
  logger: Logger;
}

export interface LivenessThread {
  /** The bound port (the configured one, or the one the OS chose for 0). */
  port: number;
  close(): Promise<void>;
}

const DEFAULT_BEAT_MS = 100;

/** Starts the thread and the main loop's heartbeat; resolves once the health port listens, rejects if it cannot. */
export function startLivenessThread(o: LivenessThreadOptions): Promise<LivenessThread> {
  const beatMs = o.beatMs ?? DEFAULT_BEAT_MS;
  const beatsBuffer = new SharedArrayBuffer(4);
  const beats = new Int32Array(beatsBuffer);
  const log = o.logger.child({ component: 'liveness' });
  const worker = new Worker(LIVENESS_WORKER_SOURCE, {
    eval: true,
    workerData: { beatsBuffer, beatMs, stallMs: o.stallMs, host: o.host, port: o.port },
    // It holds one tiny HTTP server: a small heap is plenty, and a leak there ends the thread, not the node.
    resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8 },
  });
  // The heartbeat: a timer on the main loop, so it stops exactly when the loop stops turning.
  const heartbeat = setInterval(() => Atomics.add(beats, 0, 1), beatMs);
  heartbeat.unref();
  let closing = false;
  return new Promise((resolve, reject) => {
    let started = false;
    worker.on('message', (m: { type: string; port?: number; message?: string; code?: string }) => {
      if (m.type === 'listening' && !started) {
        started = true;
        // Neither the thread nor its server keeps the process alive: shutdown is the node's decision.
        worker.unref();
        resolve({
          port: m.port!,
          close: async () => {
            closing = true;
            clearInterval(heartbeat);
            worker.postMessage('close');
            // A thread that does not finish closing in time is stopped.
            const stop = setTimeout(() => void worker.terminate().catch(() => undefined), 2_000);
            await new Promise<void>((r) => (worker.threadId < 0 ? r() : worker.once('exit', () => r())));
            clearTimeout(stop);
          },
        });
      } else if (m.type === 'error') {
        if (!started) {
          clearInterval(heartbeat);
          void worker.terminate().catch(() => undefined);
          reject(new Error(`the health port ${o.host}:${o.port} could not be opened: ${m.message ?? m.code}`));
        } else log.error({ err: m.message, code: m.code }, 'health port server error');
      }
    });
    worker.on('error', (err) => {
      // The thread died (e.g. its heap limit): the main port's /health/live still answers; say so loudly.
      log.error({ err }, 'liveness thread failed; /health/live is answered only on the HTTP port now');
      if (!started) {
        clearInterval(heartbeat);
        reject(err);
      }
    });
    worker.on('exit', (code) => {
      clearInterval(heartbeat);
      if (!closing && started) log.error({ code }, 'liveness thread exited; /health/live is answered only on the HTTP port now');
      if (!started) reject(new Error(`the liveness thread exited (${code}) before its health port listened`));
    });
  });
}
