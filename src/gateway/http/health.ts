// GET /health (seed 000: no auth, {"status":"ok"}), /health/live and /health/ready (ready only while the database
// answers, Redis is connected when the node uses it, and the node is not shutting down). Readiness turns false
// during a dependency outage and true again once it is over, with no restart (issue 20).
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../storage/db.ts';
import type { EventBus } from '../../bus/bus.ts';
import { OUTAGE_RETRY_AFTER_SECONDS } from '../../errors/outage.ts';

export interface HealthDeps {
  db: Db;
  isShuttingDown: () => boolean;
  /** The node's event bus: a Redis bus reports whether it is connected. */
  bus?: EventBus;
}

export function registerHealthRoutes(app: FastifyInstance, deps: HealthDeps): void {
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
    return { status: 'ready', database: deps.db.kind };
  });
}
