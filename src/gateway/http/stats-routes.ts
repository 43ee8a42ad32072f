// GET /v1/stats/history?minutes=60: the caller's tenant's last hour in per-minute buckets (src/stats/history.ts),
// the history behind the dashboard's charts. Read-only; any authenticated caller sees its own tenant only.
import type { FastifyInstance } from 'fastify';
import type { StatsService } from '../../stats/history.ts';
import { principalOf } from './auth-hook.ts';
import { intParam } from './query-params.ts';

export function registerStatsRoutes(app: FastifyInstance, stats: StatsService): void {
  app.get<{ Querystring: { minutes?: string } }>('/v1/stats/history', async (request) =>
    stats.history(principalOf(request).tenantId, intParam(request.query.minutes, 'minutes') ?? 60),
  );
}
