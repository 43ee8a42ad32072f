// GET /health (seed 000: no auth, {"status":"ok"}), /health/live and /health/ready (ready only while the database
// answers, Redis is connected when the node uses it, the node is not shutting down and its execution start queue is
// not full). Readiness turns false during a dependency outage and true again once it is over, with no restart
// (issue 20). Liveness here answers from the main event loop with no I/O at all, so it waits behind whatever the loop
// is doing; the probe that heavy work cannot delay is the liveness thread's, on http.health_port
// (src/gateway/liveness/, issue 24).
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../storage/db.ts';
import type { EventBus } from '../../bus/bus.ts';
import { OUTAGE_RETRY_AFTER_SECONDS } from '../../errors/outage.ts';
import type { AdmissionLoad } from '../../agents/execution/admission.ts';

export interface HealthDeps {
  db: Db;
  isShuttingDown: () => boolean;
  /** The node's event bus: a Redis bus reports whether it is connected. */
  bus?: EventBus;
  /** The execution start queue: a full one makes the node "saturated" (503) until it drains. */
  admission?: { load(): AdmissionLoad };
}

/** Event-loop delay of the last ~10 s (p99 and max, ms), reported by /health/ready. */
class LoopDelay {
  // 50 ms resolution: a stall worth reporting is far longer, and each tick wakes an idle node's loop (issue 18: with
  // the metrics' and the node load's histograms, 250 wake-ups a second at 10/10/20 ms, 60 at 50 ms).
  private current: IntervalHistogram = monitorEventLoopDelay({ resolution: 50 });
  private last = { p99: 0, max: 0 };
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.current.enable();
    this.timer = setInterval(() => {
      this.last = this.read();
      this.current.reset();
    }, 10_000);
    this.timer.unref();
  }

  private read(): { p99: number; max: number } {
    const ms = (ns: number) => Math.round(ns / 1e5) / 10;
    return this.current.count > 0 ? { p99: ms(this.current.percentile(99)), max: ms(this.current.max) } : this.last;
  }

  snapshot(): { p99_ms: number; max_ms: number } {
    const now = this.read();
    return { p99_ms: Math.max(now.p99, this.last.p99), max_ms: Math.max(now.max, this.last.max) };
  }

  close(): void {
    clearInterval(this.timer);
    this.current.disable();
  }
}

export function registerHealthRoutes(app: FastifyInstance, deps: HealthDeps): void {
  const loop = new LoopDelay();
  app.addHook('onClose', async () => loop.close());
  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/health/live', async () => ({ status: 'ok' }));
  app.get('/health/ready', async (_request, reply) => {
    if (deps.isShuttingDown()) return reply.status(503).send({ status: 'unavailable', error: 'shutting down' });
    let dbUp = false;
    try {
      dbUp = await deps.db.ping();
    } catch {
      dbUp = false;
    }
    if (!dbUp) return reply.status(503).header('retry-after', String(OUTAGE_RETRY_AFTER_SECONDS)).send({ status: 'unavailable', error: 'database not reachable' });
    if (deps.bus?.isConnected && !deps.bus.isConnected()) {
      return reply.status(503).header('retry-after', String(OUTAGE_RETRY_AFTER_SECONDS)).send({ status: 'unavailable', error: 'redis not reachable' });
    }
    const load = { ...(deps.admission ? { executions: deps.admission.load() } : {}), event_loop_delay: loop.snapshot() };
    if (load.executions?.saturated) {
      return reply
        .status(503)
        .header('retry-after', String(OUTAGE_RETRY_AFTER_SECONDS))
        .send({ status: 'saturated', error: `the execution start queue is full (${load.executions.queued} of ${load.executions.max_queued}); new starts are refused until it drains`, load });
    }
    return { status: 'ready', database: deps.db.kind, load };
  });
}
