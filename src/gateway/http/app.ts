// The HTTP server: fastify with our logger, request ids, bearer auth on /v1, JSON errors and the routes of each
// capability. Capability modules own the logic; this file only wires transports to them.
import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Authenticator } from '../../auth/principal.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Db } from '../../storage/db.ts';
import type { ClusterService } from '../../cluster/service.ts';
import { installAuth } from './auth-hook.ts';
import { lazyRequestLogger } from './lazy-request-logger.ts';
import { registerClusterRoutes } from './cluster-routes.ts';
import { installErrorHandling } from './errors.ts';
import { installInputGuard } from './input-guard.ts';
import { registerHealthRoutes } from './health.ts';
import { registerIdentityRoutes } from './identity-routes.ts';
import { registerUnimplementedRoutes } from './unimplemented.ts';
import { registerExecutionRoutes } from './execution-routes.ts';
import { registerDispatchGatewayRoute } from './dispatch-gateway-route.ts';
import { registerWsFeed } from './ws-feed.ts';
import { FeedHub } from '../feed/hub.ts';
import { registerDashboard } from './dashboard.ts';
import { registerStatsRoutes } from './stats-routes.ts';
import { StatsService } from '../../stats/history.ts';
import type { EventBus } from '../../bus/bus.ts';
import type { ExecutionService } from '../../agents/execution/service.ts';
import type { GatewayRegistry } from '../../agents/execution/gateway-server.ts';
import type { SealService } from '../../seal/service.ts';
import { registerSealRoutes } from './seal-routes.ts';
import type { ToolCatalog } from '../../tools/types.ts';
import { registerMcpRoute } from '../../mcp/http.ts';
import type { WorkflowDefinitionService } from '../../workflow/registry/service.ts';
import { registerWorkflowRoutes } from './workflow-routes.ts';
import type { WorkflowExecutionService } from '../../workflow/service.ts';
import type { ApprovalService } from '../../workflow/approvals/service.ts';
import { registerWorkflowExecutionRoutes } from './workflow-execution-routes.ts';
import { registerApprovalRoutes } from './approval-routes.ts';
import type { VolumeService } from '../../volumes/service.ts';
import { registerVolumeRoutes } from './volume-routes.ts';
import type { StimulusService } from '../../stimuli/service.ts';
import { registerStimulusRoutes } from './stimulus-routes.ts';
import type { BillingService } from '../../billing/service.ts';
import { registerBillingRoutes } from './billing-routes.ts';
import { registerMetricsRoute } from './metrics-route.ts';
import { installRateLimits } from './rate-limit.ts';
import { registerOpenApi } from './openapi.ts';
import { installRequestSchemas } from './request-schemas.ts';
import type { RateLimitsConfig } from '../../config/types.ts';
import { installHttpTracing } from '../../observability/http.ts';
import { orchMetrics } from '../../observability/metrics.ts';
import type { AdmissionLoad } from '../../agents/execution/admission.ts';
import type { LazyValidators } from './lazy-validators.ts';

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
  /** The workflow registry: deploy, list, get, delete, versions, promote, demote under /v1/workflows. */
  workflows?: WorkflowDefinitionService;
  /** SEAL attestation and signed tool calls (/v1/seal/*, /v1/invoke). */
  seal?: SealService;
  /** The tool catalog, served to external MCP clients at /v1/mcp in each caller's security context. */
  catalog?: ToolCatalog;
  /** Workflow runs (/v1/workflows/{name}/run, /v1/workflows/executions/*) and human approvals (/v1/human-approvals/*). */
  workflowRuns?: WorkflowExecutionService;
  approvals?: ApprovalService;
  /** Volumes and their files (/v1/volumes, docs/VOLUMES.md). */
  volumes?: VolumeService;
  /** Stimuli and signed webhooks (/v1/stimuli, /v1/webhooks/{source}; docs/STIMULI.md). */
  stimuli?: StimulusService;
  /** The five /v1/billing routes (docs/BILLING.md); each answers 501 when no payment provider key is set. */
  billing?: BillingService;
  /** The event bus: list streams of the live feed (/v1/ws executions, workflows, approvals, nodes). */
  bus?: EventBus;
  /** The stats behind the dashboard's charts, with the node's price table; absent: no prices. */
  stats?: StatsService;
  /** A live-feed socket with more unsent bytes than this is dropped (close 4008). Default 4 MiB. */
  wsMaxBufferedBytes?: number;
}

export interface HttpDeps {
  /** GET /metrics answers peers that are not on loopback too (config spec.metrics.allow_remote). Default false. */
  metricsAllowRemote?: boolean;
  /** HTTP rate limits (config spec.rate_limits); absent: none (tests of other parts). */
  rateLimits?: RateLimitsConfig;
  /** Redis for cluster-wide rate-limit counters; absent: per node, in memory. */
  redisUrl?: string;
  /** The execution start queue: its load is reported (and a full queue is "saturated") by /health/ready. */
  admission?: { load(): AdmissionLoad };
  /**
   * Route validators compiled on first use or when the node warms them after its start (lazy-validators.ts); absent,
   * fastify compiles them all while the app is built.
   */
  validators?: LazyValidators;
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** A registered route: its method and URL pattern (`/v1/agents/:id`). */
export interface RouteInfo {
  method: string;
  url: string;
}

const routeLists = new WeakMap<FastifyInstance, RouteInfo[]>();

/** Every route `buildHttpApp` registered (HEAD included), for tests that must cover all of them (the fuzz suite). */
export function registeredRoutes(app: FastifyInstance): readonly RouteInfo[] {
  return routeLists.get(app) ?? [];
}

export async function buildHttpApp(deps: HttpDeps): Promise<FastifyInstance> {
  const app = Fastify({
    // pino's Logger is a FastifyBaseLogger; widen it so routes take the default FastifyInstance type.
    loggerInstance: deps.logger.child({ component: 'http' }) as FastifyBaseLogger,
    // Honour a caller's request id when it is sane, else make one; it is echoed back and in every log line.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Our own onResponse hook logs each request (below). Through the log controller: the top-level
    // disableRequestLogging option prints FastifyDeprecation FSTDEP023 on every start (issue 15).
    logController: new LogController({ disableRequestLogging: true }),
    // request.log is made when a request first writes a line, not for every request (lazy-request-logger.ts).
    childLoggerFactory: (logger, bindings, options) => lazyRequestLogger(logger as Logger, bindings, options) as FastifyBaseLogger,
    return503OnClosing: true,
    bodyLimit: 8 * 1024 * 1024,
    // Route schemas (request-schemas.ts) check types; they never convert them (a JSON 5 is not the string "5", and
    // query numbers are read by intParam as digits only) nor drop unknown fields (handlers ignore them as before).
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false } },
    ...(deps.validators ? { schemaController: { compilersFactory: deps.validators.compilersFactory } } : {}),
  });
  // First: the OpenAPI generator sees every route registered after it (openapi.ts).
  await registerOpenApi(app);
  // Then the request schemas of every /v1 route, attached as each route is registered.
  installRequestSchemas(app);
  const routes: RouteInfo[] = [];
  routeLists.set(app, routes);
  app.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) routes.push({ method, url: r.url });
  });
  installHttpTracing(app);
  // Hooks that do not wait for anything take fastify's callback form: an async hook costs a promise and a microtask
  // hop per request (issue 16: the node's CPU per request bounds the API race at c = 64).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      { method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
    done();
  });
  installErrorHandling(app);
  installInputGuard(app);
  // Per-IP limit before auth, per-tenant and per-webhook-source after it (rate-limit.ts).
  const limits = deps.rateLimits ? await installRateLimits(app, { config: deps.rateLimits, logger: deps.logger, ...(deps.redisUrl ? { redisUrl: deps.redisUrl } : {}) }) : undefined;
  installAuth(app, deps.authenticator);
  limits?.afterAuth();
  registerHealthRoutes(app, { db: deps.db, isShuttingDown: deps.isShuttingDown, ...(deps.bus ? { bus: deps.bus } : {}), ...(deps.admission ? { admission: deps.admission } : {}) });
  registerMetricsRoute(app, { allowRemote: deps.metricsAllowRemote === true });
  registerIdentityRoutes(app);
  registerClusterRoutes(app, deps.cluster);
  await deps.registerAgents?.(app);
  if (deps.workflows) await registerWorkflowRoutes(app, deps.workflows);
  if (deps.executions) {
    registerExecutionRoutes(app, deps.executions);
    registerStatsRoutes(app, deps.stats ?? new StatsService(deps.db), deps.db);
    const hub = deps.bus ? new FeedHub({ db: deps.db, bus: deps.bus, nodes: { listNodes: () => deps.cluster.listNodes() as never }, logger: deps.logger }) : undefined;
    if (hub) app.addHook('onClose', () => hub.close());
    // orch_ws_subscribers at /metrics counts this feed's subscriptions while the app is up.
    const uncount = hub ? orchMetrics().countWsSubscribers(() => hub.subscriberCount()) : undefined;
    if (uncount) app.addHook('onClose', async () => uncount());
    await registerWsFeed(app, { executions: deps.executions, workflows: deps.workflowRuns, hub, authenticator: deps.authenticator, maxBufferedBytes: deps.wsMaxBufferedBytes });
  }
  if (deps.gateways) registerDispatchGatewayRoute(app, deps.gateways);
  if (deps.seal) await registerSealRoutes(app, deps.seal);
  if (deps.catalog) await registerMcpRoute(app, deps.catalog);
  if (deps.workflowRuns) registerWorkflowExecutionRoutes(app, deps.workflowRuns);
  if (deps.approvals) registerApprovalRoutes(app, deps.approvals);
  if (deps.volumes) await registerVolumeRoutes(app, deps.volumes, deps.db);
  if (deps.stimuli) await registerStimulusRoutes(app, deps.stimuli);
  if (deps.billing) registerBillingRoutes(app, deps.billing);
  await registerDashboard(app);
  registerUnimplementedRoutes(app);
  await app.ready();
  return app;
}
