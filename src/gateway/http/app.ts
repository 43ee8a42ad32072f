// The HTTP server: fastify with our logger, request ids, bearer auth on /v1, JSON errors and the routes of each
// capability. Capability modules own the logic; this file only wires transports to them.
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Authenticator } from '../../auth/principal.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Db } from '../../storage/db.ts';
import type { ClusterService } from '../../cluster/service.ts';
import { installAuth } from './auth-hook.ts';
import { registerClusterRoutes } from './cluster-routes.ts';
import { installErrorHandling } from './errors.ts';
import { registerHealthRoutes } from './health.ts';
import { registerIdentityRoutes } from './identity-routes.ts';
import { registerUnimplementedRoutes } from './unimplemented.ts';
import { registerExecutionRoutes } from './execution-routes.ts';
import { registerDispatchGatewayRoute } from './dispatch-gateway-route.ts';
import { registerWsFeed } from './ws-feed.ts';
import type { ExecutionService } from '../../agents/execution/service.ts';
import type { GatewayRegistry } from '../../agents/execution/gateway-server.ts';
import type { SealService } from '../../seal/service.ts';
import { registerSealRoutes } from './seal-routes.ts';
import type { ToolCatalog } from '../../tools/types.ts';
import { registerMcpRoute } from '../../mcp/http.ts';

export interface HttpDeps {
  logger: Logger;
  db: Db;
  authenticator: Authenticator;
  cluster: ClusterService;
  isShuttingDown: () => boolean;
  /** The agents capability; absent on a node that runs no executions (tests of other parts). */
  executions?: ExecutionService;
  gateways?: GatewayRegistry;
  /** Registers the agent registry routes (owned by src/agents). */
  registerAgents?: (app: FastifyInstance) => Promise<void> | void;
  /** SEAL attestation and signed tool calls (/v1/seal/*, /v1/invoke). */
  seal?: SealService;
  /** The tool catalog, served to external MCP clients at /v1/mcp in each caller's security context. */
  catalog?: ToolCatalog;
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

export async function buildHttpApp(deps: HttpDeps): Promise<FastifyInstance> {
  const app = Fastify({
    // pino's Logger is a FastifyBaseLogger; widen it so routes take the default FastifyInstance type.
    loggerInstance: deps.logger.child({ component: 'http' }) as FastifyBaseLogger,
    // Honour a caller's request id when it is sane, else make one; it is echoed back and in every log line.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    disableRequestLogging: true,
    return503OnClosing: true,
    bodyLimit: 8 * 1024 * 1024,
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      { method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
  });
  installErrorHandling(app);
  installAuth(app, deps.authenticator);
  registerHealthRoutes(app, { db: deps.db, isShuttingDown: deps.isShuttingDown });
  registerIdentityRoutes(app);
  registerClusterRoutes(app, deps.cluster);
  await deps.registerAgents?.(app);
  if (deps.executions) {
    registerExecutionRoutes(app, deps.executions);
    await registerWsFeed(app, deps.executions);
  }
  if (deps.gateways) registerDispatchGatewayRoute(app, deps.gateways);
  if (deps.seal) await registerSealRoutes(app, deps.seal);
  if (deps.catalog) await registerMcpRoute(app, deps.catalog);
  registerUnimplementedRoutes(app);
  await app.ready();
  return app;
}
