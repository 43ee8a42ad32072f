// POST /v1/dispatch-gateway on the node's HTTP server: the inner-loop endpoint of seed 000, for bootstraps that
// reach the orchestrator over TCP. It is internal only: calls from anything but loopback are refused. Sandboxes
// started by this node use their own per-execution unix socket instead (src/agents/execution/gateway-server.ts).
import type { FastifyInstance } from 'fastify';
import type { GatewayRegistry } from '../../agents/execution/gateway-server.ts';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

export function registerDispatchGatewayRoute(app: FastifyInstance, gateways: GatewayRegistry): void {
  app.post('/v1/dispatch-gateway', async (request, reply) => {
    if (!LOOPBACK.has(request.socket.remoteAddress ?? '')) return reply.status(403).send({ error: 'the dispatch gateway is internal only' });
    const out = await gateways.handle(request.body);
    return reply.status(out.status).send(out.body);
  });
}
