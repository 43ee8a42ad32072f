// GET /v1/cluster/nodes: the members this cluster knows, from cluster_nodes (CONTRACT.md).
import type { FastifyInstance } from 'fastify';
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { ClusterService } from '../../cluster/service.ts';
import type { PeerStatus } from '../../actors/node-peer/repo.ts';

const STATUSES: readonly PeerStatus[] = ['ACTIVE', 'DRAINING', 'UNHEALTHY', 'DEREGISTERED'];

export function registerClusterRoutes(app: FastifyInstance, cluster: ClusterService): void {
  app.get<{ Querystring: { status?: string } }>('/v1/cluster/nodes', async (request) => {
    const raw = request.query.status?.toUpperCase();
    if (raw !== undefined && !STATUSES.includes(raw as PeerStatus)) {
      throw new OrchError(Errors.BAD_REQUEST, `invalid status filter: ${request.query.status}`, {
        details: { allowed: STATUSES },
      });
    }
    return { nodes: await cluster.listNodes(raw as PeerStatus | undefined) };
  });
}
