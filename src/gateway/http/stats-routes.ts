// GET /v1/stats/history?minutes=60: the caller's tenant's last hour in per-minute buckets with the cluster's node
// samples (src/stats/history.ts), the history behind the dashboard's charts. GET /v1/stats/usage?minutes=60
// [&scope=cluster]: tokens and cost per tenant and per agent (src/stats/usage.ts); the caller's tenant, or every
// tenant for an operator asking scope=cluster (403 otherwise). Read-only.
import type { FastifyInstance } from 'fastify';
import { hasRole } from '../../auth/roles.ts';
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { StatsService } from '../../stats/history.ts';
import { readUsage } from '../../stats/usage.ts';
import type { Queryable } from '../../storage/db.ts';
import { principalOf } from './auth-hook.ts';
import { intParam } from './query-params.ts';
import type { RequestOf } from './request-schemas.ts';

export function registerStatsRoutes(app: FastifyInstance, stats: StatsService, db: Queryable): void {
  app.get<RequestOf<'GET /v1/stats/history'>>('/v1/stats/history', async (request) =>
    stats.history(principalOf(request).tenantId, intParam(request.query.minutes, 'minutes') ?? 60),
  );

  app.get<RequestOf<'GET /v1/stats/usage'>>('/v1/stats/usage', async (request) => {
    const p = principalOf(request);
    const scope = request.query.scope ?? 'tenant';
    if (scope === 'cluster' && !hasRole(p, 'operator')) throw new OrchError(Errors.FORBIDDEN, 'usage of every tenant needs the operator role');
    return readUsage(db, stats.prices, { tenant: p.tenantId, minutes: intParam(request.query.minutes, 'minutes') ?? 60, cluster: scope === 'cluster' });
  });
}
