// GET /v1/cluster/nodes: the members this cluster knows, from cluster_nodes (CONTRACT.md);
// POST /v1/cluster/nodes/{node_id}/drain (operator only): stop routing to a node, let its executions finish;
// POST /v1/cluster/nodes/{node_id}/undrain (operator only): route to it again.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RequestOf } from './request-schemas.ts';
import { hasRole } from '../../auth/roles.ts';
import { principalOf } from './auth-hook.ts';
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { ClusterService } from '../../cluster/service.ts';
import type { PeerStatus } from '../../actors/node-peer/repo.ts';

const STATUSES: readonly PeerStatus[] = ['ACTIVE', 'DRAINING', 'UNHEALTHY', 'DEREGISTERED'];

export function registerClusterRoutes(app: FastifyInstance, cluster: ClusterService): void {
  app.get<RequestOf<'GET /v1/cluster/nodes'>>('/v1/cluster/nodes', async (request) => {
    const raw = request.query.status?.toUpperCase();
    if (raw !== undefined && !STATUSES.includes(raw as PeerStatus)) {
      throw new OrchError(Errors.BAD_REQUEST, `invalid status filter: ${request.query.status}`, {
        details: { allowed: STATUSES },
      });
    }
    return { nodes: await cluster.listNodes(raw as PeerStatus | undefined) };
  });

  app.post<RequestOf<'POST /v1/cluster/nodes/:node_id/drain'>>('/v1/cluster/nodes/:node_id/drain', async (request) => {
    const reason = operatorReason(request, request.body, 'draining');
    return cluster.drain(request.params.node_id, reason);
  });

  app.post<RequestOf<'POST /v1/cluster/nodes/:node_id/undrain'>>('/v1/cluster/nodes/:node_id/undrain', async (request) => {
    const reason = operatorReason(request, request.body, 'undraining');
    return cluster.undrain(request.params.node_id, reason);
  });
}

/**
 * Drain and undrain: the operator role (403 otherwise), then the optional `reason` (the route schema has checked
 * it is a string of at most 500 characters).
 */
function operatorReason(request: FastifyRequest, body: RequestOf<'POST /v1/cluster/nodes/:node_id/drain'>['Body'], what: string): string | undefined {
  if (!hasRole(principalOf(request), 'operator')) throw new OrchError(Errors.FORBIDDEN, `${what} a node needs the operator role`);
  return body?.reason;
}
