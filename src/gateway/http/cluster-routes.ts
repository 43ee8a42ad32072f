// GET /v1/cluster/nodes: the members this cluster knows, from cluster_nodes (CONTRACT.md);
// POST /v1/cluster/nodes/{node_id}/drain (operator only): stop routing to a node, let its executions finish.
import type { FastifyInstance } from 'fastify';
import { hasRole } from '../../auth/roles.ts';
import { principalOf } from './auth-hook.ts';
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

  app.post<{ Params: { node_id: string }; Body: { reason?: unknown } | undefined }>('/v1/cluster/nodes/:node_id/drain', async (request) => {
    const p = principalOf(request);
    if (!hasRole(p, 'operator')) throw new OrchError(Errors.FORBIDDEN, 'draining a node needs the operator role');
    const reason = request.body?.reason;
    if (reason !== undefined && typeof reason !== 'string') throw new OrchError(Errors.BAD_REQUEST, 'reason must be a string');
    if (typeof reason === 'string' && reason.length > 500) throw new OrchError(Errors.BAD_REQUEST, 'reason is longer than 500 characters');
    return cluster.drain(request.params.node_id, reason);
  });
}
