// Routes of the seeds and CONTRACT.md that later issues build. Until then each answers 501 with what it is, never a
// fake success, so clients can tell "not built" from "not found".
import type { FastifyInstance, HTTPMethods } from 'fastify';

const PLANNED: ReadonlyArray<readonly [HTTPMethods, string]> = [
  ['GET', '/v1/agents'],
  ['POST', '/v1/agents'],
  ['GET', '/v1/agents/lookup/:name'],
  ['GET', '/v1/agents/:id'],
  ['PUT', '/v1/agents/:id'],
  ['DELETE', '/v1/agents/:id'],
  ['GET', '/v1/agents/:id/versions'],
  ['POST', '/v1/agents/:id/execute'],
  ['GET', '/v1/executions'],
  ['POST', '/v1/executions'],
  ['GET', '/v1/executions/:id'],
  ['DELETE', '/v1/executions/:id'],
  ['POST', '/v1/executions/:id/cancel'],
  ['GET', '/v1/executions/:id/stream'],
  ['GET', '/v1/workflows'],
  ['POST', '/v1/workflows'],
  ['GET', '/v1/workflows/:name'],
  ['DELETE', '/v1/workflows/:name'],
  ['POST', '/v1/workflows/:name/run'],
  ['GET', '/v1/workflows/executions'],
  ['GET', '/v1/workflows/executions/:id'],
  ['DELETE', '/v1/workflows/executions/:id'],
  ['POST', '/v1/workflows/executions/:id/cancel'],
  ['POST', '/v1/workflows/executions/:id/signal'],
  ['GET', '/v1/workflows/executions/:id/logs'],
  ['GET', '/v1/workflows/executions/:id/stream'],
  ['GET', '/v1/human-approvals'],
  ['GET', '/v1/human-approvals/:id'],
  ['POST', '/v1/human-approvals/:id/approve'],
  ['POST', '/v1/human-approvals/:id/reject'],
  ['POST', '/v1/seal/attest'],
  ['POST', '/v1/seal/invoke'],
  ['POST', '/v1/invoke'],
  ['POST', '/v1/dispatch-gateway'],
  ['POST', '/v1/stimuli'],
  ['POST', '/v1/webhooks/:source'],
  ['GET', '/v1/billing/prices'],
  ['POST', '/v1/billing/checkout'],
  ['POST', '/v1/billing/portal'],
  ['GET', '/v1/billing/subscription'],
  ['GET', '/v1/billing/invoices'],
  ['POST', '/v1/cluster/nodes/:node_id/drain'],
  ['POST', '/v1/cluster/nodes/:node_id/undrain'],
];

export function registerUnimplementedRoutes(app: FastifyInstance): void {
  for (const [method, url] of PLANNED) {
    if (app.hasRoute({ method, url })) continue;
    app.route({
      method,
      url,
      handler: async (_request, reply) => reply.status(501).send({ error: `not implemented: ${method} ${url}` }),
    });
  }
}
