// GET /v1/cluster/nodes: the members this cluster knows, from cluster_nodes (CONTRACT.md);
// POST /v1/cluster/nodes/{node_id}/drain (operator only): stop routing to a node, let its executions finish;
// POST /v1/cluster/nodes/{node_id}/undrain (operator only): route to it again.
import type { FastifyInstance, FastifyRequest } from 'fastify';
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
    const reason = operatorReason(request, 'draining');
    return cluster.drain(request.params.node_id, reason);
  });

  app.post<{ Params: { node_id: string }; Body: { reason?: unknown } | undefined }>('/v1/cluster/nodes/:node_id/undrain', async (request) => {
    const reason = operatorReason(request, 'undraining');
    return cluster.undrain(request.params.node_id, reason);
  });
}

/** Drain and undrain: the operator role (403 otherwise), then an optional `reason` string of at most 500 characters. */
function operatorReason(request: FastifyRequest<{ Body: { reason?: unknown } | undefined }>, what: string): string | undefined {
  if (!hasRole(principalOf(request), 'operator')) throw new OrchError(Errors.FORBIDDEN, `${what} a node needs the operator role`);
  const body = request.body as unknown;
  if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) throw new OrchError(Errors.BAD_REQUEST, 'the body must be a JSON object');
  const reason = request.body?.reason;
  if (reason !== undefined && typeof reason !== 'string') throw new OrchError(Errors.BAD_REQUEST, 'reason must be a string');
  if (typeof reason === 'string' && reason.length > 500) throw new OrchError(Errors.BAD_REQUEST, 'reason is longer than 500 characters');
  return reason;
}
