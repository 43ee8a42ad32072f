// GET /health (seed 000: no auth, {"status":"ok"}), /health/live and /health/ready (ready only while the database
// answers and the node is not shutting down).
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../storage/db.ts';

export interface HealthDeps {
  db: Db;
  isShuttingDown: () => boolean;
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
    if (!dbUp) return reply.status(503).send({ status: 'unavailable', error: 'database not reachable' });
    return { status: 'ready', database: deps.db.kind };
  });
}
