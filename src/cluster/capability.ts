// The cluster capability of a node (docs/CLUSTER.md): on a controller (or hybrid) the ClusterAuthority, the
// Membership, the PeerWatch and the NodeClusterService handlers; on a worker the membership client that joins the
// configured controller, and the worker's own NodeClusterService handlers (PushConfig). src/node/node.ts wires it.
import os from 'node:os';
import { parse as parseYaml } from 'yaml';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { NodeConfig } from '../config/types.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import type { EventBus } from '../bus/bus.ts';
import type { ActorRuntime } from '../actors/runtime.ts';
import { NODE_PEER_KIND } from '../actors/node-peer/actor.ts';
import { PeerWatch } from '../actors/node-peer/watch.ts';
import { RedisReplayGuard } from '../seal/replay.ts';
import { createLlmRegistry } from '../agents/llm/registry.ts';
import type { NodeClusterServiceServer } from '../gen/orch/cluster/v1/cluster.js';
import { ClusterAuthority, type NonceGuard } from './authority.ts';
import { Membership, configHash } from './membership.ts';
import { loadOrCreateNodeKey, type NodeKey } from './node-key.ts';
import { clusterHandlers, workerClusterHandlers } from './grpc/cluster-handlers.ts';
import { WorkerMembership } from './worker-membership.ts';
import { nodeLoadSampler } from './node-load.ts';
import { checkManagedConfig, type ManagedConfig, type SwappableLlmRegistry } from './managed-config.ts';

export interface ControllerCluster {
  authority: ClusterAuthority;
  membership: Membership;
  key: NodeKey;
  handlers: Partial<NodeClusterServiceServer>;
  /** Starts the heartbeat-deadline watch (after the node's actors were recovered). */
  startWatch(): void;
  close(): Promise<void>;
}

/** Redis SET NX when Redis is configured (shared by every controller), else the database. */
async function nonceGuard(config: NodeConfig, logger: Logger): Promise<{ guard?: NonceGuard; close(): Promise<void> }> {
  if (!config.redis.url) return { close: async () => undefined };
  const redis = await RedisReplayGuard.open(config.redis.url, logger);
  return { guard: { firstUse: (nodeId, nonce, keepMs) => redis.firstUse(`cluster:${nodeId}`, nonce, keepMs) }, close: () => redis.close() };
}

export async function startControllerCluster(o: { config: NodeConfig; db: Db; bus: EventBus; actors: ActorRuntime; logger: Logger }): Promise<ControllerCluster> {
  const { config, db, bus, actors, logger } = o;
  const nonces = await nonceGuard(config, logger);
  const join = { ...(config.cluster.join_token ? { token: config.cluster.join_token } : {}), ...(config.cluster.allowed_node_keys ? { allowedKeys: config.cluster.allowed_node_keys } : {}) };
  if (!join.token && !join.allowedKeys?.length) {
    logger.warn('no spec.cluster.join_token or allowed_node_keys: this controller admits no remote nodes (docs/CLUSTER.md "Joining")');
  }
  const authority = new ClusterAuthority({ db, logger, join, selfId: config.node.id, ...(nonces.guard ? { nonces: nonces.guard } : {}) });
  const membership = new Membership({ db, bus, logger, onRegistered: (nodeId) => actors.spawn(NODE_PEER_KIND, nodeId) });
  const key = await loadOrCreateNodeKey(config.dataDir);
  const heartbeatMs = Math.round(config.cluster.heartbeat_interval_seconds * 1000);
  const watch = new PeerWatch({ db, actors, selfId: config.node.id, heartbeatMs, missedHeartbeats: config.cluster.missed_heartbeats ?? 3, logger });
  let watching = false;
  return {
    authority,
    membership,
    key,
    handlers: clusterHandlers({ authority, membership, logger }),
    startWatch: () => {
      if (!watching) watch.start();
      watching = true;
    },
    close: async () => {
      await watch.stop();
      await nonces.close();
    },
  };
}

export interface WorkerCluster {
  /** The membership client once join() was called. */
  readonly membership: WorkerMembership | undefined;
  authority: ClusterAuthority;
  key: NodeKey;
  handlers: Partial<NodeClusterServiceServer>;
  /** Joins the controller (in the background) advertising `grpcAddress`. */
  join(grpcAddress: string): void;
  close(): Promise<void>;
}

export async function startWorkerCluster(o: {
  config: NodeConfig;
  db: Db;
  runtimes: string[];
  /** The node's LLM registry, replaced when a managed `llm_providers` section arrives. */
  llm?: SwappableLlmRegistry;
  /** Called when a shutdown command was obeyed: the node stops its process. */
  onShutdown: (reason: string) => void;
  logger: Logger;
}): Promise<WorkerCluster> {
  const { config, db, logger } = o;
  const controllers = config.cluster.controllers;
  if (!controllers?.length) throw new OrchError(Errors.CONFIG_INVALID, 'spec.cluster.controller is required for role worker');
  const key = await loadOrCreateNodeKey(config.dataDir);
  // Public, and what an operator lists in a controller's spec.cluster.allowed_node_keys to admit this node by key.
  logger.info({ node_key: Buffer.from(key.publicKey).toString('base64'), join_token: config.cluster.join_token ? 'set' : 'absent' }, 'node key');
  // The worker shares the database, and so the cluster key that verifies a controller's token (PushConfig).
  const authority = new ClusterAuthority({ db, logger });
  // The load is read asynchronously and handed to the (synchronous) heartbeat builder.
  const load = nodeLoadSampler(db, config.node.id, logger);
  let membership: WorkerMembership | undefined;
  const apply = async (yaml: string, hash: string): Promise<string | undefined> => {
    if (configHash(yaml) !== hash) return 'config_hash is not the SHA-256 of config_yaml';
    let doc: unknown;
    try {
      doc = yaml.trim() === '' ? {} : parseYaml(yaml);
    } catch (err) {
      return `config_yaml is not YAML: ${(err as Error).message}`;
    }
    const problem = checkManagedConfig(doc);
    if (problem) return problem;
    const managed = (doc ?? {}) as ManagedConfig;
    if (managed.llm_providers && o.llm) {
      try {
        o.llm.replace(createLlmRegistry(managed.llm_providers, logger));
      } catch (err) {
        return `llm_providers: ${(err as Error).message}`;
      }
      config.llm_providers = managed.llm_providers;
    }
    const hb = managed.cluster?.heartbeat_interval_seconds;
    if (hb !== undefined) {
      config.cluster.heartbeat_interval_seconds = hb;
      membership?.setHeartbeatMs(Math.round(hb * 1000));
    }
    membership?.markApplied(hash);
    return undefined;
  };
  const makeMembership = (grpcAddress: string): WorkerMembership =>
    new WorkerMembership({
      controller: controllers,
      nodeId: config.node.id,
      role: 'worker',
      key,
      ...(config.cluster.join_token ? { joinToken: config.cluster.join_token } : {}),
      grpcAddress,
      heartbeatMs: Math.round(config.cluster.heartbeat_interval_seconds * 1000),
      capabilities: () => ({
        gpu_count: 0,
        vram_gb: 0,
        cpu_cores: os.cpus().length,
        available_memory_gb: Math.round((os.freemem() / 1024 ** 3) * 10) / 10,
        supported_runtimes: o.runtimes,
        tags: config.node.tags,
      }),
      load,
      applyConfig: apply,
      onShutdown: o.onShutdown,
      logger,
    });
  return {
    get membership() {
      return membership;
    },
    authority,
    key,
    handlers: workerClusterHandlers({ authority, applyConfig: apply, logger }),
    join: (grpcAddress) => {
      membership ??= makeMembership(grpcAddress).start();
    },
    close: async () => {
      if (membership) {
        await membership.stop('stopping');
        await membership.done();
      }
    },
  };
}
