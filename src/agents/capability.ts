// Wires the agents capability into a node: sandbox runtimes, the gateway registry, the ExecutionActor kind and
// the ExecutionService that HTTP and gRPC share. The node decides when; this decides how.
import type { ActorRuntime } from '../actors/runtime.ts';
import type { ActorKind, ActorMessage } from '../actors/kind.ts';
import type { EventBus } from '../bus/bus.ts';
import type { NodeConfig } from '../config/types.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import { LeaseRenewer } from '../storage/lease-renewer.ts';
import { lapsedRowKeys, type LapsedScope } from '../actors/leased-row/table.ts';
import type { LapsedSource } from '../actors/leased-row/sweeper.ts';
import { EXECUTIONS_TABLE } from './execution/repo.ts';
import { executionKind, type ExecutionMessage } from './execution/actor.ts';
import { GatewayRegistry } from './execution/gateway-server.ts';
import { ExecutionService, type AgentSource } from './execution/service.ts';
import type { CmdCeilings } from './execution/tools.ts';
import { createToolCatalog } from '../tools/catalog.ts';
import type { ToolCatalog } from '../tools/types.ts';
import type { TenantJudge } from './execution/judge.ts';
import type { CortexService } from '../cortex/service.ts';
import type { LlmRegistry } from './llm/types.ts';
import { createRuntime, dockerAvailable, DEFAULT_DOCKER_HOST, DEFAULT_RUNTIME_IMAGE } from './runtime/select.ts';
import type { ContainerRuntime } from './runtime/types.ts';
import { processRuntimeOptions } from './runtime/tenant-sandbox.ts';
import { SandboxCommands } from '../seal/sandbox-commands.ts';
import type { VolumeService } from '../volumes/service.ts';
import { DEFAULT_ADMISSION, StartAdmission } from './execution/admission.ts';

/**
 * How long an execution row's claim lasts without renewal (renewed every third of it); `spec.cluster.
 * execution_lease_seconds` overrides it. A killed or frozen node's executions are picked up by a live node's
 * lapsed-lease sweep within about this long.
 */
export const EXECUTION_LEASE_MS = 30_000;

export interface AgentsCapability {
  executions: ExecutionService;
  gateways: GatewayRegistry;
  kind: ActorKind<ActorMessage>;
  runtimes: Partial<Record<'process' | 'docker', ContainerRuntime>>;
  /** Live sandboxes of this node's executions (cmd.run over SEAL runs in them). */
  sandboxCommands: SandboxCommands;
  /** For the lapsed-lease sweep: the executions this node resumes when their claim lapsed. */
  lapsed: LapsedSource;
  leaseMs: number;
  /** The start queue (admission.ts): its load is in /health/ready. */
  admission: StartAdmission;
}

export function cmdCeilings(config: NodeConfig): CmdCeilings {
  const cmd = config.builtin_dispatchers.find((d) => d.name === 'cmd')?.config ?? {};
  const num = (v: unknown, d: number): number => (typeof v === 'number' && v > 0 ? v : d);
  return { max_output_bytes: num(cmd.max_output_bytes, 524_288), timeout_ceiling_secs: num(cmd.timeout_ceiling_secs, 300) };
}

export async function startAgentsCapability(o: {
  config: NodeConfig;
  db: Db;
  bus: EventBus;
  actors: ActorRuntime;
  agents: AgentSource;
  llm: LlmRegistry;
  judge?: TenantJudge;
  /** Cortex memory for agents with spec.execution.memory (absent: Cortex disabled, memory is ignored). */
  cortex?: CortexService;
  /** The node's tool catalog for the refinement loop; default: one built from the config. */
  catalog?: ToolCatalog;
  logger: Logger;
  onFirstGenerate?: (executionId: string, at: number) => void;
  /**
   * An execution of this node ended (completed, failed, cancelled, given up): the node tells the run waiting on it.
   * `workflowExecutionId`: the run it belongs to as the caller knows it (null: none), so the node need not read it
   * back; undefined: not known here, the node reads the row.
   */
  onEnded?: (executionId: string, workflowExecutionId?: string | null) => void;
  /** The node's volumes: spec.volumes of executions become real volumes (src/agents/execution/volumes.ts). */
  volumes?: VolumeService;
  /** The claim an execution row gets (default EXECUTION_LEASE_MS). */
  leaseMs?: number;
}): Promise<AgentsCapability> {
  const leaseMs = o.leaseMs ?? EXECUTION_LEASE_MS;
  const log = o.logger.child({ component: 'agents' });
  const nodeId = o.config.node.id;
  const runtimes: Partial<Record<'process' | 'docker', ContainerRuntime>> = {
    process: createRuntime('process', { logger: log, nodeId, process: processRuntimeOptions(o.config) }),
  };
  // The helper that forks sandboxes, forked now while this process is small (runtime/spawner.ts).
  (runtimes.process as { warm?: () => void }).warm?.();
  const dockerHost = o.config.runtime.docker_host ?? DEFAULT_DOCKER_HOST;
  if (o.config.runtime.docker_host || o.config.runtime.default_isolation === 'docker') {
    if (await dockerAvailable(dockerHost)) {
      runtimes.docker = createRuntime('docker', { logger: log, nodeId, dockerHost });
    } else {
      log.warn({ dockerHost }, 'no container engine answers; docker isolation is unavailable on this node');
    }
  }
  // Every sandbox labelled with this node id belongs to an earlier incarnation (a crash, a SIGKILL): each execution
  // still running gets a fresh one when its actor resumes, so all of them are orphans now.
  if (runtimes.docker) {
    const reaped = await runtimes.docker.reap('orch.node_id', nodeId).catch((err: unknown) => {
      log.warn({ err }, 'reaping orphan containers failed');
      return [];
    });
    if (reaped.length > 0) log.info({ containers: reaped.length }, 'removed orphan containers of an earlier run');
  }
  const gateways = new GatewayRegistry();
  const sandboxCommands = new SandboxCommands();
  // All of this node's execution claims renewed in one statement per tick (as for workflow runs), not one UPDATE
  // per execution every third of the lease.
  const renewer = new LeaseRenewer(o.db, {
    table: 'executions',
    keyColumn: 'id',
    keyType: 'UUID',
    nodeId,
    ttlMs: leaseMs,
    columns: ['cancel_requested'],
    logger: log,
  }).start();
  const admission = new StartAdmission(o.config.admission ?? DEFAULT_ADMISSION);
  const kind = executionKind({
    admission,
    db: o.db,
    bus: o.bus,
    llm: o.llm,
    runtimes,
    defaultIsolation: o.config.runtime.default_isolation,
    defaultImage: DEFAULT_RUNTIME_IMAGE,
    gateways,
    nodeId,
    dataDir: o.config.dataDir,
    ceilings: cmdCeilings(o.config),
    sandboxCommands,
    catalog: o.catalog ?? createToolCatalog({ config: o.config, logger: log }),
    ...(o.judge ? { judge: o.judge } : {}),
    ...(o.cortex ? { cortex: o.cortex } : {}),
    ...(o.onFirstGenerate ? { onFirstGenerate: o.onFirstGenerate } : {}),
    ...(o.onEnded ? { onEnded: o.onEnded } : {}),
    ...(o.volumes ? { volumes: o.volumes } : {}),
    ...(o.config.fuse ? { fuseAddress: o.config.fuse.address } : {}),
    logger: log,
    leaseMs,
    renewer,
  });
  o.actors.register<ExecutionMessage>(kind);
  const executions = new ExecutionService(o.db, o.bus, o.actors, o.agents, nodeId, leaseMs, log, undefined, admission);
  // Lapsed executions this node resumes itself: a worker only its own (a worker's loss is its controllers' to
  // judge), a hybrid any that no worker holds.
  const scope: LapsedScope = o.config.node.role === 'worker' ? 'own' : 'non-workers';
  const lapsed: LapsedSource = { kind: kind.name, lapsed: (live) => lapsedRowKeys(o.db, EXECUTIONS_TABLE, nodeId, scope, live) };
  return { executions, gateways, kind: kind as unknown as ActorKind<ActorMessage>, runtimes, sandboxCommands, lapsed, leaseMs, admission };
}
