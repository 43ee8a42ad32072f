// One orch node: storage, bus, identity, actors, HTTP and gRPC, started in that order and stopped in reverse.
// The role decides which parts run; `hybrid` (the default) runs all of them in one process.
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../logging/logger.ts';
import type { NodeConfig } from '../config/types.ts';
import type { Db } from '../storage/db.ts';
import type { EventBus } from '../bus/bus.ts';
import type { Authenticator } from '../auth/principal.ts';
import { openDb } from '../storage/open.ts';
import { openBus } from '../bus/open.ts';
import { createAuthenticator } from '../auth/authenticator.ts';
import { ActorRuntime } from '../actors/runtime.ts';
import { recoverAll, type RecoveryReport } from '../actors/recovery.ts';
import { nodePeerKind, type NodePeerMessage } from '../actors/node-peer/actor.ts';
import { upsertSelf } from '../actors/node-peer/repo.ts';
import type { ActorKind, ActorMessage } from '../actors/kind.ts';
import { ClusterService } from '../cluster/service.ts';
import { buildHttpApp } from '../gateway/http/app.ts';
import { createRuntimeServer } from '../gateway/grpc/runtime-server.ts';
import { createClusterServer } from '../cluster/grpc/cluster-server.ts';
import { startGrpcServer } from '../gateway/grpc/start.ts';
import { executionHandlers } from '../gateway/grpc/execution-handlers.ts';
import { registerAgentRoutes } from '../gateway/http/agent-routes.ts';
import { AgentService } from '../agents/service.ts';
import { startAgentsCapability, type AgentsCapability } from '../agents/capability.ts';
import { createLlmJudge } from '../agents/execution/judge.ts';
import { createLlmRegistry } from '../agents/llm/registry.ts';
import { SealService } from '../seal/service.ts';
import { createToolCatalog } from '../tools/catalog.ts';
import { contextFromManifest } from '../tools/policy.ts';
import { sealHandlers, SEAL_EXEMPT_METHODS } from '../gateway/grpc/seal-handlers.ts';

export interface NodeAddresses {
  http: string;
  grpc: string;
  /** Absent on a worker-only node, which serves no cluster API. */
  cluster?: string;
}

export interface RunningNode {
  readonly config: NodeConfig;
  readonly addresses: NodeAddresses;
  readonly db: Db;
  readonly bus: EventBus;
  readonly authenticator: Authenticator;
  readonly actors: ActorRuntime;
  readonly recovered: RecoveryReport[];
  /** Graceful stop: refuse new work, finish what is in flight, release rows, close the stores. */
  stop(): Promise<void>;
}

export async function startNode(config: NodeConfig, logger: Logger): Promise<RunningNode> {
  const log = logger.child({ node: config.node.id, role: config.node.role });
  const cleanups: (() => Promise<void>)[] = [];
  const undo = async (): Promise<void> => {
    for (const fn of cleanups.reverse()) await fn().catch((err: unknown) => log.error({ err }, 'cleanup failed'));
  };
  try {
    const db = await openDb({ url: config.database.url, dataDir: config.dataDir }, log);
    cleanups.push(() => db.close());
    const bus = await openBus({ url: config.redis.url }, log);
    cleanups.push(() => bus.close());
    const authenticator = await createAuthenticator(config);

    const actors = new ActorRuntime(log, `orch-${config.node.id}`);
    cleanups.push(() => actors.shutdown());
    const kinds: ActorKind<ActorMessage>[] = [];
    const heartbeatMs = Math.round(config.cluster.heartbeat_interval_seconds * 1000);
    const peerKind = nodePeerKind({
      db,
      bus,
      selfId: config.node.id,
      heartbeatMs,
      missedHeartbeats: config.cluster.missed_heartbeats ?? 3,
      logger: log,
    });
    actors.register<NodePeerMessage>(peerKind);
    kinds.push(peerKind as unknown as ActorKind<ActorMessage>);

    // Agents: the registry, model providers, and (on nodes that run work) the ExecutionActor kind.
    const agentService = new AgentService(db, log);
    const llm = createLlmRegistry(config.llm_providers, log);
    let agentsCap: AgentsCapability | undefined;
    // One tool catalog for the whole node: the refinement loop, SEAL and MCP all call it. The executions service is
    // bound late because it is made by the agents capability, which needs the catalog first.
    const catalog = createToolCatalog({ config, logger: log, db, agents: agentService, executions: () => agentsCap?.executions });
    if (config.node.role !== 'controller') {
      agentsCap = await startAgentsCapability({
        config,
        db,
        bus,
        actors,
        agents: agentService,
        llm,
        judge: createLlmJudge(llm, agentService),
        catalog,
        logger: log,
      });
      kinds.push(agentsCap.kind);
    }

    // SEAL: agent containers attest and send signed tool calls, routed through the tool catalog.
    const seal = new SealService({ db, dataDir: config.dataDir, catalog, contextFor: contextFromManifest, logger: log });

    let shuttingDown = false;
    const cluster = new ClusterService(db);
    const app: FastifyInstance = await buildHttpApp({
      logger: log,
      db,
      authenticator,
      cluster,
      isShuttingDown: () => shuttingDown,
      registerAgents: (app) => registerAgentRoutes(app, agentService),
      seal,
      catalog,
      ...(agentsCap ? { executions: agentsCap.executions, gateways: agentsCap.gateways } : {}),
    });
    await app.listen({ host: config.http.bind, port: config.http.port });
    cleanups.push(() => app.close());
    const httpPort = (app.server.address() as { port: number }).port;

    const runtime = await startGrpcServer(
      createRuntimeServer({
        // The SEAL RPCs authenticate by their own token and signature: exempt from bearer auth on every node.
        auth: { ...config.grpc_auth, exempt_methods: [...config.grpc_auth.exempt_methods, ...SEAL_EXEMPT_METHODS], authenticator },
        logger: log,
        handlers: { ...(agentsCap ? executionHandlers(agentsCap.executions, log) : {}), ...sealHandlers(seal, log) },
      }),
      config.http.bind,
      config.grpc.port,
    );
    cleanups.push(() => runtime.close());
    let clusterAddress: string | undefined;
    if (config.node.role !== 'worker') {
      const clusterSrv = await startGrpcServer(createClusterServer({ logger: log }), config.http.bind, config.cluster.cluster_grpc_port);
      cleanups.push(() => clusterSrv.close());
      clusterAddress = `${config.http.bind}:${clusterSrv.port}`;
    }
    const grpcAddress = config.node.grpc_address ?? `${config.http.bind}:${runtime.port}`;

    // Our own membership row first, then every non-terminal row this node owns gets its actor back.
    await upsertSelf(db, { nodeId: config.node.id, role: config.node.role, grpcAddress, tags: config.node.tags });
    const recovered = await recoverAll(actors, kinds, log);

    const addresses: NodeAddresses = {
      http: `http://${config.http.bind}:${httpPort}`,
      grpc: `${config.http.bind}:${runtime.port}`,
      ...(clusterAddress ? { cluster: clusterAddress } : {}),
    };
    log.info({ addresses, database: db.kind, bus: bus.kind }, 'node started');

    let stopping: Promise<void> | undefined;
    return {
      config,
      addresses,
      db,
      bus,
      authenticator,
      actors,
      recovered,
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
