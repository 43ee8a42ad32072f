// One orch node: storage, bus, identity, actors, HTTP and gRPC, started in that order and stopped in reverse.
// The role decides which parts run; `hybrid` (the default) runs all of them in one process.
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../logging/logger.ts';
import type { NodeConfig } from '../config/types.ts';
import type { Db } from '../storage/db.ts';
import type { EventBus } from '../bus/bus.ts';
import type { Authenticator } from '../auth/principal.ts';
import { openBus } from '../bus/open.ts';
import { retryThroughOutage } from '../storage/outage-retry.ts';
import { beginFirstSteps, nodeLogger, startupWaitMs, type FirstSteps } from './first-steps.ts';
import { ActorRuntime } from '../actors/runtime.ts';
import { recoverAll, type RecoveryReport } from '../actors/recovery.ts';
import { startLapsedSweep, sweepIntervalFor, type LapsedSource } from '../actors/leased-row/sweeper.ts';
import { nodePeerKind, type NodePeerMessage } from '../actors/node-peer/actor.ts';
import { upsertSelf } from '../actors/node-peer/repo.ts';
import type { ActorKind, ActorMessage } from '../actors/kind.ts';
import { advertisedAddress } from '../cluster/advertise.ts';
import { ActorPost } from '../cluster/tell/post.ts';
import { tellActorHandler } from '../cluster/tell/handler.ts';
import { EXECUTION_KIND } from '../agents/execution/actor.ts';
import { ClusterService } from '../cluster/service.ts';
import { nodeLoadSampler } from '../cluster/node-load.ts';
import { startControllerCluster, startWorkerCluster, type ControllerCluster, type WorkerCluster } from '../cluster/capability.ts';
import { SwappableLlmRegistry } from '../cluster/managed-config.ts';
import { buildHttpApp, registeredRoutes, type RouteInfo } from '../gateway/http/app.ts';
import { lazyValidators } from '../gateway/http/lazy-validators.ts';
import { createRuntimeServer } from '../gateway/grpc/runtime-server.ts';
import { createClusterServer } from '../cluster/grpc/cluster-server.ts';
import { startGrpcServer } from '../gateway/grpc/start.ts';
import { executionHandlers } from '../gateway/grpc/execution-handlers.ts';
import { registerAgentRoutes } from '../gateway/http/agent-routes.ts';
import { AgentService } from '../agents/service.ts';
import { prepareNodeRunRoot, removeNodeRunRoot } from '../agents/execution/run-dir.ts';
import { startAgentsCapability, type AgentsCapability } from '../agents/capability.ts';
import { createLlmJudge } from '../agents/execution/judge.ts';
import { createLlmRegistry } from '../agents/llm/registry.ts';
import { SealService } from '../seal/service.ts';
import { RedisReplayGuard } from '../seal/replay.ts';
import { createToolCatalog, type NodeToolCatalog } from '../tools/catalog.ts';
import { startWorkflowCapability, type WorkflowCapability } from '../workflow/engine/capability.ts';
import { WorkflowDefinitionService } from '../workflow/registry/service.ts';
import { workflowStateRunners } from '../workflow/states/node-runners.ts';
import { ExecutionRouter } from '../cluster/routing.ts';
import { startForwarding, type ForwardingCapability } from '../cluster/forwarding.ts';
import { forwardExecutionHandler, routeExecutionHandler } from '../cluster/grpc/routing-handlers.ts';
import { ExecutionService } from '../agents/execution/service.ts';
import { EXECUTION_LEASE_MS } from '../agents/capability.ts';
import { startSeenSignaturePruner } from '../seal/prune.ts';
import { sandboxUserOf, scratchDirOf, startScratchSweeper, systemStateRuntime, warnIfUnsandboxed } from '../agents/runtime/tenant-sandbox.ts';
import type { NodeCredentials } from '../cluster/envelope.ts';
import { WorkflowStorage } from '../workflow/engine/storage.ts';
import { VolumeService } from '../volumes/service.ts';
import { startRetention } from '../storage/retention.ts';
import { StatsService } from '../stats/history.ts';
import { PriceTable } from '../stats/pricing.ts';
import { startStatsSampler } from '../stats/sampler.ts';
import { contextFromManifest } from '../tools/policy.ts';
import { sealHandlers, SEAL_EXEMPT_METHODS } from '../gateway/grpc/seal-handlers.ts';
import { fsalHandlers } from '../gateway/grpc/fsal-handlers.ts';
import { fsalExtensionHandlers } from '../gateway/grpc/fsal-extension.ts';
import { FsalService } from '../fsal/service.ts';
import { createStimulusService } from '../stimuli/wiring.ts';
import { stimulusHandlers } from '../gateway/grpc/stimulus-handlers.ts';
import { workflowHandlers } from '../gateway/grpc/workflow-handlers.ts';
import { BillingService } from '../billing/service.ts';
import { observeClusterNodes } from '../observability/node-metrics.ts';
import { JudgeService } from '../judges/service.ts';
import { judgeHandlers } from '../gateway/grpc/judge-handlers.ts';
import { CortexService } from '../cortex/service.ts';
import { cortexHandlers } from '../gateway/grpc/cortex-handlers.ts';
import { ManifestGenerator } from '../pipeline/generate.ts';
import { IntentPipeline } from '../pipeline/intent.ts';
import { CortexSearchIndex } from '../cortex/search.ts';
import { startLivenessThread } from '../gateway/liveness/thread.ts';
import { DEFAULT_LIVE_STALL_SECONDS } from '../gateway/liveness/defaults.ts';

/** When a starting node takes its first per-minute stats sample (src/stats/sampler.ts). */
const FIRST_STATS_SAMPLE_AFTER_MS = 3_000;

export interface NodeAddresses {
  http: string;
  grpc: string;
  /** Absent on a worker-only node, which serves no cluster API. */
  cluster?: string;
  /** The liveness thread's /health/live (http.health_port); absent when not configured. */
  health?: string;
}

export interface RunningNode {
  readonly config: NodeConfig;
  readonly addresses: NodeAddresses;
  readonly db: Db;
  readonly bus: EventBus;
  readonly authenticator: Authenticator;
  readonly actors: ActorRuntime;
  readonly recovered: RecoveryReport[];
  /** Volumes under `<dataDir>/volumes` (HTTP, tools, FSAL); docs/VOLUMES.md. */
  readonly volumes: VolumeService;
  /** The node's one tool catalog (loop, SEAL, MCP); docs/TOOLS.md. */
  readonly tools: NodeToolCatalog;
  /** Every HTTP route this node serves (method and URL pattern). */
  readonly httpRoutes: readonly RouteInfo[];
  /** Graceful stop: refuse new work, finish what is in flight, release rows, close the stores. */
  stop(): Promise<void>;
  /** Resolves with the reason when a controller told this worker to shut down (the CLI then stops the process). */
  readonly shutdownRequested: Promise<string>;
  /** Controller side of the cluster (controller, hybrid); docs/CLUSTER.md. */
  readonly controllerCluster?: ControllerCluster;
  /** Worker side of the cluster (worker): the membership client; docs/CLUSTER.md. */
  readonly workerCluster?: WorkerCluster;
}

/** How long after its start a node begins compiling the routes' request validators (see warm() below). */
export const WARM_VALIDATORS_AFTER_MS = 1000;

/** `first`: the database and authenticator already begun (`orch up` begins them while this module loads). */
export async function startNode(config: NodeConfig, logger: Logger, first?: FirstSteps): Promise<RunningNode> {
  const log = nodeLogger(config, logger);
  warnIfUnsandboxed(config, log);
  const cleanups: (() => Promise<void>)[] = [];
  const undo = async (): Promise<void> => {
    for (const fn of cleanups.reverse()) await fn().catch((err: unknown) => log.error({ err }, 'cleanup failed'));
  };
  try {
    // The database and the authenticator (a fresh data dir's dev identity key: RSA, made on the thread pool) open
    // side by side; first-steps.ts.
    const steps = first ?? beginFirstSteps(config, logger);
    // PGlite begun on its worker thread by `orch up` is usable before it is open (its statements wait for it): the
    // node is built meanwhile, and the open is awaited before the node listens (issue 15 item 4: start-up).
    const db = steps.early ?? (await steps.db);
    cleanups.push(() => db.close());
    // Cluster gauges (orch_cluster_nodes, heartbeats) at /metrics, read from cluster_nodes at scrape time.
    const unobserveNodes = observeClusterNodes(db);
    cleanups.push(async () => unobserveNodes());
    // A node (re)started while Redis is down waits for it (issue 20), bounded by startup_wait_seconds.
    const bus = await retryThroughOutage(() => openBus({ url: config.redis.url }, log), {
      maxElapsedMs: startupWaitMs(config.redis.startup_wait_seconds),
      logger: log,
      what: 'connect to Redis at start',
    });
    cleanups.push(() => bus.close());
    const authenticator = await steps.authenticator;

    // The gateway sockets' short directory (src/agents/execution/run-dir.ts): made now (leftovers of nodes whose
    // data dir is gone are removed), removed once the actors have stopped.
    await prepareNodeRunRoot(config.dataDir);
    cleanups.push(() => removeNodeRunRoot(config.dataDir));
    const actors = new ActorRuntime(log, `orch-${config.node.id}`);
    cleanups.push(() => actors.shutdown());
    // Messages to actors wherever their lease is held (docs/CLUSTER.md "Messages to actors"): in-process when this
    // node holds the row, TellActor to the holder otherwise (with this node's own token, once it has one).
    const post = new ActorPost({ db, nodeId: config.node.id, logger: log });
    cleanups.push(async () => post.close());
    post.register('execution', async (key, msg) => {
      if (!actors.isLive(EXECUTION_KIND, key)) return false;
      if (msg.type !== 'cancel') return true;
      // Obeyed only when the row asks for it: the message carries no fact.
      const res = await db.query<{ cancel_requested: boolean }>('SELECT cancel_requested FROM executions WHERE id = $1', [key]);
      if (res.rows[0]?.cancel_requested === true) actors.tell(EXECUTION_KIND, key, { type: 'cancel' });
      return true;
    });
    const kinds: ActorKind<ActorMessage>[] = [];
    const heartbeatMs = Math.round(config.cluster.heartbeat_interval_seconds * 1000);
    const executionLeaseMs = config.cluster.execution_lease_seconds ? Math.round(config.cluster.execution_lease_seconds * 1000) : EXECUTION_LEASE_MS;
    // A worker keeps no cluster_nodes row itself (below), so only controllers and hybrids sample for one.
    // Its executions are counted by the heartbeat's own statement (heartbeatSelf), not by the sampler.
    const selfLoad = config.node.role !== 'worker' ? nodeLoadSampler(undefined, config.node.id, log) : undefined;
    const peerKind = nodePeerKind({
      db,
      bus,
      selfId: config.node.id,
      heartbeatMs,
      missedHeartbeats: config.cluster.missed_heartbeats ?? 3,
      // The same load a worker reports (executions, CPU, memory): `orch node ls` and `drained` read it.
      ...(selfLoad ? { load: () => ({ ...selfLoad() }) } : {}),
      logger: log,
    });
    // A worker keeps no cluster_nodes rows itself: it is a member through the cluster protocol (docs/CLUSTER.md).
    if (config.node.role !== 'worker') {
      actors.register<NodePeerMessage>(peerKind);
      kinds.push(peerKind as unknown as ActorKind<ActorMessage>);
    }
    const controllerCluster = config.node.role !== 'worker' ? await startControllerCluster({ config, db, bus, actors, logger: log }) : undefined;
    if (controllerCluster) cleanups.push(() => controllerCluster.close());
    // This controller's (or hybrid's) own node token and key, for its calls to other nodes (ForwardExecution,
    // TellActor); renewed five minutes before it expires. A worker tells no other node: its poll is the net.
    let selfCreds: (NodeCredentials & { expiresAtMs: number }) | undefined;
    const selfCredentials = controllerCluster
      ? async (): Promise<NodeCredentials> => {
          if (!selfCreds || selfCreds.expiresAtMs - Date.now() < 300_000) {
            selfCreds = await controllerCluster.authority.selfCredentials(config.node.id, config.node.role === 'hybrid' ? 'hybrid' : 'controller', controllerCluster.key);
          }
          return selfCreds;
        }
      : undefined;
    // An execution ended here (a hybrid's own, or one a controller forwarded): the workflow run waiting on it (an
    // Agent state) is told at once, wherever it is held. A worker's ends are told by the controller it streams to.
    // The actor that ran it knows its run from its row (issue 24: reading it back was a statement per execution).
    const executionEnded = (id: string, knownWf?: string | null): void => {
      if (knownWf === null) return;
      const wf = knownWf !== undefined ? Promise.resolve(knownWf) : db.query<{ wf: string | null }>('SELECT workflow_execution_id::TEXT AS wf FROM executions WHERE id = $1', [id]).then((r) => r.rows[0]?.wf);
      wf
        .then(async (run) => {
          if (run) await post.tell('workflow', run, { type: 'wake', topic: `execution:${id}` });
        })
        .catch((err: unknown) => log.debug({ err, execution: id }, 'the run waiting on an execution was not told of its end; it re-reads it'));
    };
    if (selfCredentials) {
      post.setCredentials(selfCredentials);
      // Made now rather than at the first message: the first token may have to create the cluster signing key.
      selfCredentials().catch((err: unknown) => log.warn({ err }, 'node token for calls to other nodes not made yet; made at the first call'));
    }

    // Agents: the registry, model providers, and (on nodes that run work) the ExecutionActor kind.
    const agentService = new AgentService(db, log);
    // Swappable: a controller's managed `llm_providers` section replaces the providers of a running worker.
    const llm = new SwappableLlmRegistry(createLlmRegistry(config.llm_providers, log));
    let agentsCap: AgentsCapability | undefined;
    let workflowCap: WorkflowCapability | undefined;
    // One tool catalog for the whole node: the refinement loop, SEAL and MCP all call it. The executions service is
    // bound late because it is made by the agents capability, which needs the catalog first.
    // Volumes: one service for HTTP, tools and FSAL; the reaper removes expired ephemeral volumes of this node.
    // Quota reserved ahead in chunks (one UPDATE per 8 MiB of growth rather than per FSAL/FUSE write; docs/VOLUMES.md).
    const volumes = new VolumeService({ db, dataDir: config.dataDir, nodeId: config.node.id, logger: log, quotaChunkBytes: 8 * 1024 * 1024 });
    const reaper = volumes.startReaper(Math.round((config.volumes?.reaper_interval_seconds ?? 60) * 1000));
    cleanups.push(() => reaper.stop());
    cleanups.push(() => volumes.releaseReservations());
    // The dashboard's history charts (src/stats): per-minute node and queue samples on every node with the cluster's
    // database (a worker's rows are its controller's), and cost priced by spec.pricing.
    if (config.node.role !== 'worker') {
      // The first sample once the node is up, not during its start (sampler.ts); it then includes this node's row.
      const sampler = startStatsSampler(db, log, 60_000, FIRST_STATS_SAMPLE_AFTER_MS);
      cleanups.push(() => sampler.stop());
    }
    const stats = new StatsService(db, new PriceTable(config.pricing, (alias) => llm.resolve(alias)?.model));
    // Retention (docs/RETENTION.md): only with spec.retention; absent, the history is kept.
    if (config.retention) {
      const retention = startRetention(db, config.retention, log);
      cleanups.push(() => retention.stop());
    }
    // The workflow registry: one service behind /v1/workflows, the orch.workflow.* registry tools and the engine.
    const workflowDefs = new WorkflowDefinitionService(db, log);
    // Cortex memory (docs/CORTEX.md): only with a `cortex` section in the node config.
    const cortex = config.cortex ? new CortexService(db, config.cortex, log) : undefined;
    // The same index serves orch.agent.search / orch.workflow.search: agents and workflows are embedded when deployed.
    const cortexSearch = cortex ? new CortexSearchIndex({ db, embeddings: cortex.embeddings, agents: agentService, workflows: workflowDefs, logger: log }) : undefined;
    if (cortexSearch) {
      agentService.onDeployed((e) => cortexSearch.index('agent', { tenant_id: e.tenant_id, id: e.agent_id, name: e.name, description: e.description, labels: e.labels }));
      workflowDefs.onDeployed((e) => cortexSearch.index('workflow', { tenant_id: e.tenant_id, id: e.workflow_id, name: e.name, description: e.description, labels: e.labels }));
    }
    // orch.agent.generate / orch.workflow.generate and the orch.execute.intent pipeline (a run of a built-in workflow).
    const generator = new ManifestGenerator({ llm, agents: agentService, workflows: workflowDefs, logger: log });
    const pipeline = new IntentPipeline({ agents: agentService, workflows: workflowDefs, runs: () => workflowCap?.runs, generator, logger: log });
    const catalog = createToolCatalog({ config, logger: log, db, bus, agents: agentService, volumes, workflows: workflowDefs, executions: () => agentsCap?.executions ?? routedExecutions, workflowRuns: () => workflowCap?.runs, pipeline, generator, ...(cortexSearch ? { cortexSearch } : {}) });
    if (config.node.role !== 'controller') {
      agentsCap = await startAgentsCapability({
        config,
        db,
        bus,
        actors,
        agents: agentService,
        llm,
        judge: createLlmJudge(llm, agentService),
        ...(cortex ? { cortex } : {}),
        catalog,
        volumes,
        leaseMs: executionLeaseMs,
        ...(config.node.role === 'hybrid' ? { onEnded: executionEnded } : {}),
        logger: log,
      });
      kinds.push(agentsCap.kind);
    }
    // A controller runs no executions: its `execution` kind routes each one to a worker and forwards it there
    // (ForwardExecution), relaying the worker's events on this node's bus; docs/ROUTING.md.
    const router = new ExecutionRouter(db, config.node.id);
    if (controllerCluster) {
      // Any member's status change, written by any controller, makes the next routing decision re-read membership.
      const sub = await bus.subscribePrefix('node:', () => router.invalidate());
      cleanups.push(() => sub.close());
    }
    let forwarding: ForwardingCapability | undefined;
    let routedExecutions: ExecutionService | undefined;
    if (config.node.role === 'controller' && controllerCluster) {
      const creds = selfCredentials!;
      forwarding = startForwarding({
        db, bus, actors, nodeId: config.node.id, router, leaseMs: executionLeaseMs, logger: log,
        ...(config.cluster.worker_wait_seconds !== undefined ? { workerWaitMs: Math.round(config.cluster.worker_wait_seconds * 1000) } : {}),
        credentials: creds,
        onEnded: executionEnded,
      });
      const fw = forwarding;
      cleanups.push(async () => fw.close());
      kinds.push(fw.kind);
      routedExecutions = new ExecutionService(db, bus, actors, agentService, config.node.id, executionLeaseMs, log, post);
    }
    agentsCap?.executions.setTeller(post);
    // Workflow runs and approvals (controller and hybrid): WorkflowActor and ApprovalActor kinds, recovered below.
    if (config.node.role !== 'worker') {
      const caps = agentsCap;
      // spec.storage volumes of workflow runs, made through the same VolumeService and mounted into containers.
      const systemRuntime = await systemStateRuntime(config, caps?.runtimes, log);
      if (typeof systemRuntime === 'string') log.warn({ reason: systemRuntime }, 'workflow System states cannot run on this node');
      const workflowStorage = new WorkflowStorage(volumes, { db, logger: log, ...(config.fuse ? { fuseAddress: config.fuse.address } : {}) });
      workflowCap = startWorkflowCapability({
        db,
        bus,
        actors,
        nodeId: config.node.id,
        workflows: workflowDefs,
        logger: log,
        runners: workflowStateRunners({ executions: () => caps?.executions ?? routedExecutions, agents: agentService, db, docker: caps?.runtimes.docker, resolveVolume: (ref) => workflowStorage.acquire(ref), settleVolume: (ref) => workflowStorage.release(ref) }),
        storage: workflowStorage,
        // System states: a sandbox of the node's isolation, never the host (docs/SECURITY.md).
        system: {
          runtime: () => systemRuntime,
          user: sandboxUserOf(config),
          scratchDir: scratchDirOf(config),
          network: config.runtime.system_state_network,
          resolveVolume: (ref) => workflowStorage.acquire(ref),
          settleVolume: (ref) => workflowStorage.release(ref),
        },
        ...(config.cluster.workflow_lease_seconds ? { leaseMs: Math.round(config.cluster.workflow_lease_seconds * 1000) } : {}),
        ...(config.workflow?.poll_seconds !== undefined ? { pollMs: Math.round(config.workflow.poll_seconds * 1000) } : {}),
        ...(config.workflow?.park_after_seconds !== undefined ? { parkAfterMs: Math.round(config.workflow.park_after_seconds * 1000) } : {}),
        post,
      });
      kinds.push(...workflowCap.kinds);
      const stopSweeper = workflowCap.startSweeper();
      cleanups.push(async () => stopSweeper());
      const stopScratchSweep = startScratchSweeper({ db, scratchDir: scratchDirOf(config), logger: log });
      cleanups.push(async () => stopScratchSweep());
    }
    // Stimuli and signed webhooks route into workflow runs (controller and hybrid); docs/STIMULI.md.
    const stimuli = workflowCap
      ? createStimulusService({ db, config: config.stimuli, runs: workflowCap.runs, llm, agents: agentService, workflows: workflowDefs, logger: log })
      : undefined;

    // SEAL: agent containers attest and send signed tool calls, routed through the tool catalog. With Redis the
    // replay record is a shared SET NX there (no database round trip per invoke).
    const sealReplay = config.redis.url ? await RedisReplayGuard.open(config.redis.url, log) : undefined;
    if (sealReplay) cleanups.push(() => sealReplay.close());
    const seal = new SealService({
      db,
      dataDir: config.dataDir,
      catalog,
      contextFor: contextFromManifest,
      nodeId: config.node.id,
      volumes,
      ...(agentsCap ? { sandboxCommands: agentsCap.sandboxCommands } : {}),
      ...(sealReplay ? { replay: sealReplay, bus } : {}),
      logger: log,
    });
    cleanups.push(() => seal.close());
    // The database replay record outlives nothing it protects: rows past their session's expiry go (Redis keys expire).
    if (!sealReplay) {
      const stopPrune = startSeenSignaturePruner({ db, logger: log });
      cleanups.push(async () => stopPrune());
    }

    let shuttingDown = false;
    const cluster = new ClusterService(db, controllerCluster?.membership, () => router.invalidate());
    // The routes' request validators are compiled after the start (warmValidators below), not while the app is built.
    const validators = lazyValidators();
    const app: FastifyInstance = await buildHttpApp({
      validators,
      logger: log,
      db,
      authenticator,
      cluster,
      isShuttingDown: () => shuttingDown,
      registerAgents: (app) => registerAgentRoutes(app, agentService),
      workflows: workflowDefs,
      seal,
      catalog,
      volumes,
      ...(agentsCap ? { executions: agentsCap.executions, gateways: agentsCap.gateways, admission: agentsCap.admission } : {}),
      ...(routedExecutions ? { executions: routedExecutions } : {}),
      ...(workflowCap ? { workflowRuns: workflowCap.runs, approvals: workflowCap.approvals } : {}),
      ...(stimuli ? { stimuli } : {}),
      billing: new BillingService(db, config.billing, log),
      stats,
      bus,
      metricsAllowRemote: config.metrics?.allow_remote === true,
      ...(config.rate_limits ? { rateLimits: config.rate_limits } : {}),
      ...(config.redis.url ? { redisUrl: config.redis.url } : {}),
    });
    // Open and migrated before anyone is told the node is up: /health answers only after this.
    if (steps.early) {
      const opened = await steps.db;
      // Only if the first open failed and was retried (openDb's outage retry): the node was built on the failed one.
      if (opened !== steps.early) {
        await opened.close().catch(() => undefined);
        throw new Error('the database was opened again while the node was being built');
      }
    }
    await app.listen({ host: config.http.bind, port: config.http.port });
    cleanups.push(() => app.close());
    const httpPort = (app.server.address() as { port: number }).port;
    // /health/live that the main loop's work cannot delay: a thread of its own on http.health_port.
    const liveness =
      config.http.health_port !== undefined
        ? await startLivenessThread({ host: config.http.bind, port: config.http.health_port, stallMs: (config.http.live_stall_seconds ?? DEFAULT_LIVE_STALL_SECONDS) * 1000, logger: log })
        : undefined;
    if (liveness) cleanups.push(() => liveness.close());

    // FsalService: its StorageEvents are committed in batches; what is queued is committed at shutdown.
    const fsal = new FsalService({ db, volumes, bus, logger: log });
    cleanups.push(() => fsal.close());
    const runtime = await startGrpcServer(
      createRuntimeServer({
        // The SEAL RPCs authenticate by their own token and signature: exempt from bearer auth on every node.
        auth: { ...config.grpc_auth, exempt_methods: [...config.grpc_auth.exempt_methods, ...SEAL_EXEMPT_METHODS], authenticator },
        logger: log,
        handlers: { ...(agentsCap ? executionHandlers(agentsCap.executions, log) : {}), ...sealHandlers(seal, log), ...(stimuli ? stimulusHandlers(stimuli, log) : {}),
          ...(workflowCap ? workflowHandlers(workflowCap.runs, log) : {}),
          // ValidateWithJudges: judge agents run as executions (docs/JUDGES.md); Cortex answers FAILED_PRECONDITION when disabled.
          ...judgeHandlers(new JudgeService({ executions: () => agentsCap?.executions ?? routedExecutions, agents: agentService, logger: log }), log),
          ...cortexHandlers(cortex),
          ...(routedExecutions ? executionHandlers(routedExecutions, log) : {}),
        },
        // FsalService: the FUSE daemon's backend (docs/FSAL.md).
        fsal: fsalHandlers(fsal, log),
        fsalExtension: fsalExtensionHandlers(fsal, log),
      }),
      config.http.bind,
      config.grpc.port,
    );
    cleanups.push(() => runtime.close());
    let clusterAddress: string | undefined;
    let requestShutdown: (reason: string) => void = () => undefined;
    const shutdownRequested = new Promise<string>((resolve) => (requestShutdown = resolve));
    // A worker serves NodeClusterService too (PushConfig, ForwardExecution from controllers) and joins its controller.
    const workerCluster =
      config.node.role === 'worker'
        ? await startWorkerCluster({ config, db, runtimes: Object.keys(agentsCap?.runtimes ?? {}), llm, onShutdown: (reason) => requestShutdown(reason), logger: log })
        : undefined;
    {
      const wc = workerCluster;
      const handlers = {
        ...(controllerCluster?.handlers ?? workerCluster?.handlers ?? {}),
        // RouteExecution on a controller, ForwardExecution on a worker (docs/ROUTING.md).
        ...(controllerCluster ? routeExecutionHandler({ authority: controllerCluster.authority, router, logger: log }) : {}),
        // TellActor on every node: wakes the workflow runs or executions it holds.
        ...tellActorHandler({ authority: (controllerCluster?.authority ?? wc?.authority)!, post, db, logger: log }),
        ...(wc ? forwardExecutionHandler({ authority: wc.authority, db, bus, actors, nodeId: config.node.id, isDraining: () => wc.membership?.isDraining() ?? false, logger: log }) : {}),
      };
      const clusterSrv = await startGrpcServer(createClusterServer({ logger: log, handlers }), config.http.bind, config.cluster.cluster_grpc_port);
      cleanups.push(() => clusterSrv.close());
      clusterAddress = `${config.http.bind}:${clusterSrv.port}`;
    }
    if (workerCluster) {
      // Stopped first on the way down (cleanups run in reverse): DeregisterNode before the servers close.
      cleanups.push(() => workerCluster.close());
      workerCluster.join(advertisedAddress({ bind: config.http.bind, boundPort: Number(clusterAddress.slice(clusterAddress.lastIndexOf(':') + 1)), advertise: config.cluster.advertise_address }));
    }
    const grpcAddress = config.node.grpc_address ?? `${config.http.bind}:${runtime.port}`;

    // Our own membership row first, then every non-terminal row this node owns gets its actor back.
    // Its cluster address too, where other nodes send TellActor for the runs it holds.
    const clusterPort = Number(clusterAddress.slice(clusterAddress.lastIndexOf(':') + 1));
    const advertisedCluster = advertisedAddress({ bind: config.http.bind, boundPort: clusterPort, advertise: config.cluster.advertise_address });
    if (config.node.role !== 'worker') await upsertSelf(db, { nodeId: config.node.id, role: config.node.role, grpcAddress, tags: config.node.tags, clusterAddress: advertisedCluster });
    const recovered = await recoverAll(actors, kinds, log);
    controllerCluster?.startWatch();
    // Executions held by workers whose heartbeats stopped: failed (worker_lost) or routed again.
    const stopLossSweep = forwarding?.startSweeper(heartbeatMs);
    if (stopLossSweep) cleanups.push(async () => stopLossSweep());
    // Executions whose claim lapsed (a node killed, frozen or cut off; an actor that gave up): picked up here within
    // a sweep interval, in every topology, not at the next restart (src/actors/leased-row/sweeper.ts).
    const lapsedSources = [agentsCap?.lapsed, forwarding?.lapsed].filter((x): x is LapsedSource => x !== undefined);
    if (lapsedSources.length > 0) {
      const lapsedSweep = startLapsedSweep({ actors, sources: lapsedSources, intervalMs: sweepIntervalFor(executionLeaseMs), logger: log });
      cleanups.push(async () => lapsedSweep.stop());
    }

    const addresses: NodeAddresses = {
      http: `http://${config.http.bind}:${httpPort}`,
      grpc: `${config.http.bind}:${runtime.port}`,
      ...(clusterAddress ? { cluster: clusterAddress } : {}),
      ...(liveness ? { health: `http://${config.http.bind}:${liveness.port}/health/live` } : {}),
    };
    log.info({ addresses, database: db.kind, bus: bus.kind }, 'node started');
    // After the start, between requests: the first request to each route then finds its validator compiled. A
    // schema ajv refuses is a bug in request-schemas.ts; it is logged here and that route answers 500. Begun a
    // moment after the start, not at once: its first compile (ajv's meta-schema, ~0.1 s) otherwise ran before the
    // banner and the first /health answer (issue 15 item 4: start-up). A route used before then compiles its own.
    const warmTimer = setTimeout(() => validators.warm().catch((err: unknown) => log.error({ err }, 'a route validator did not compile')), WARM_VALIDATORS_AFTER_MS);
    warmTimer.unref();
    cleanups.push(async () => clearTimeout(warmTimer));

    let stopping: Promise<void> | undefined;
    return {
      config,
      addresses,
      db,
      bus,
      authenticator,
      actors,
      recovered,
      volumes,
      tools: catalog,
      httpRoutes: registeredRoutes(app),
      shutdownRequested,
      ...(controllerCluster ? { controllerCluster } : {}),
      ...(workerCluster ? { workerCluster } : {}),
      stop: () => {
        stopping ??= (async () => {
          shuttingDown = true;
          log.info('stopping');
          await undo();
          log.info('stopped');
        })();
        return stopping;
      },
    };
  } catch (err) {
    await undo();
    throw err;
  }
}
