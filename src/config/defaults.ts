// Validated file (or nothing) → complete NodeConfig. Every default of docs/CONFIG.md is here, and they are the
// `npm start` defaults: with no file at all this returns the zero-install hybrid node.
import { DEFAULT_SANDBOX_USER } from '../agents/runtime/types.ts';
import { DEFAULT_ADMISSION } from '../agents/execution/admission.ts';
import path from 'node:path';
import { parseControllers } from './controllers.ts';
import { parseNodeKey } from './node-keys.ts';
import type { NodeConfigFile } from './schema.ts';
import type { NodeConfig } from './types.ts';

export const DEFAULTS = {
  // 1,000 requests/s per client address, per tenant and per webhook source, over one-minute windows: far above
  // what one client of the suite or the benchmarks sends (the heaviest, /v1/whoami at ~6,500/s, runs as the
  // operator from loopback: both exempt), low enough that one tenant cannot take a node's whole capacity.
  rateLimits: {
    per_ip: { max: 60_000, window_seconds: 60 },
    per_tenant: { max: 60_000, window_seconds: 60 },
    per_webhook_source: { max: 60_000, window_seconds: 60 },
    exempt_ips: ['127.0.0.1', '::1', '::ffff:127.0.0.1'],
    exempt_tenants: ['orch-system'],
  },
  role: 'hybrid',
  httpBind: '127.0.0.1',
  httpPort: 8080,
  grpcPort: 50051,
  clusterGrpcPort: 50056,
  heartbeatIntervalSeconds: 30,
  missedHeartbeats: 3,
  /** Agent bootstrap containers call Generate on the internal network without a user token (seed 000). */
  grpcAuthExempt: ['/orch.v1.InnerLoop/Generate'],
  isolation: 'process',
  dataDir: './.orch/data',
  logLevel: 'info',
  classificationThreshold: 0.7,
  /** No prices shipped: model prices change and differ per contract, so a wrong default cost would mislead. */
  currency: 'USD',
} as const;

/** `node-<hostname>`, lower-cased and reduced to the node-id alphabet. */
export function defaultNodeId(hostname: string): string {
  const host = hostname.toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^[^a-z0-9]+/, '');
  return `node-${host || 'local'}`.slice(0, 63);
}

export interface DefaultsContext {
  hostname: string;
  /** Relative paths written in the file (data_dir, auth.jwks_file) are resolved against the file's directory. */
  baseDir: string;
  /** The default data dir (not written in any file) is relative to the working directory, like `npm start`'s. */
  cwd: string;
}

export function withDefaults(file: NodeConfigFile | undefined, ctx: DefaultsContext): NodeConfig {
  const s = file?.spec ?? {};
  const nodeId = s.node?.id ?? defaultNodeId(ctx.hostname);
  const config: NodeConfig = {
    name: file?.metadata?.name ?? nodeId,
    node: {
      id: nodeId,
      role: s.node?.role ?? DEFAULTS.role,
      tags: s.node?.tags ?? [],
      ...(s.node?.grpc_address ? { grpc_address: s.node.grpc_address } : {}),
    },
    http: {
      bind: s.http?.bind ?? DEFAULTS.httpBind,
      port: s.http?.port ?? DEFAULTS.httpPort,
      ...(s.http?.health_port !== undefined ? { health_port: s.http.health_port } : {}),
      ...(s.http?.live_stall_seconds !== undefined ? { live_stall_seconds: s.http.live_stall_seconds } : {}),
    },
    grpc: { port: s.grpc?.port ?? DEFAULTS.grpcPort },
    grpc_auth: {
      enabled: s.grpc_auth?.enabled ?? true,
      exempt_methods: s.grpc_auth?.exempt_methods ?? [...DEFAULTS.grpcAuthExempt],
    },
    cluster: {
      cluster_grpc_port: s.cluster?.cluster_grpc_port ?? DEFAULTS.clusterGrpcPort,
      ...(s.cluster?.controller !== undefined ? { controllers: parseControllers(s.cluster.controller, 'spec.cluster.controller') } : {}),
      ...(s.cluster?.advertise_address ? { advertise_address: s.cluster.advertise_address } : {}),
      heartbeat_interval_seconds: s.cluster?.heartbeat_interval_seconds ?? DEFAULTS.heartbeatIntervalSeconds,
      missed_heartbeats: s.cluster?.missed_heartbeats ?? DEFAULTS.missedHeartbeats,
      ...(s.cluster?.workflow_lease_seconds ? { workflow_lease_seconds: s.cluster.workflow_lease_seconds } : {}),
      ...(s.cluster?.join_token ? { join_token: s.cluster.join_token } : {}),
      ...(s.cluster?.allowed_node_keys ? { allowed_node_keys: s.cluster.allowed_node_keys.map((k, i) => parseNodeKey(k, `spec.cluster.allowed_node_keys[${i}]`)) } : {}),
      ...(s.cluster?.execution_lease_seconds ? { execution_lease_seconds: s.cluster.execution_lease_seconds } : {}),
      ...(s.cluster?.worker_wait_seconds !== undefined ? { worker_wait_seconds: s.cluster.worker_wait_seconds } : {}),
    },
    ...(s.workflow?.poll_seconds !== undefined || s.workflow?.park_after_seconds !== undefined
      ? {
          workflow: {
            ...(s.workflow.poll_seconds !== undefined ? { poll_seconds: s.workflow.poll_seconds } : {}),
            ...(s.workflow.park_after_seconds !== undefined ? { park_after_seconds: s.workflow.park_after_seconds } : {}),
          },
        }
      : {}),
    database: {
      ...(s.database?.url ? { url: s.database.url } : {}),
      ...(s.database?.startup_wait_seconds !== undefined ? { startup_wait_seconds: s.database.startup_wait_seconds } : {}),
    },
    redis: {
      ...(s.redis?.url ? { url: s.redis.url } : {}),
      ...(s.redis?.startup_wait_seconds !== undefined ? { startup_wait_seconds: s.redis.startup_wait_seconds } : {}),
    },
    llm_providers: (s.llm_providers ?? []).map((p) => ({ ...p, models: p.models.map((m) => ({ ...m })) })),
    runtime: {
      default_isolation: s.runtime?.default_isolation ?? DEFAULTS.isolation,
      ...(s.runtime?.docker_host ? { docker_host: s.runtime.docker_host } : {}),
      ...(s.runtime?.orchestrator_url ? { orchestrator_url: s.runtime.orchestrator_url } : {}),
      ...(s.runtime?.bwrap_path ? { bwrap_path: s.runtime.bwrap_path } : {}),
      ...(s.runtime?.slirp4netns_path ? { slirp4netns_path: s.runtime.slirp4netns_path } : {}),
      sandbox_uid: s.runtime?.sandbox_uid ?? DEFAULT_SANDBOX_USER.uid,
      sandbox_gid: s.runtime?.sandbox_gid ?? DEFAULT_SANDBOX_USER.gid,
      system_state_network: s.runtime?.system_state_network === true,
      unsandboxed_process: s.runtime?.unsandboxed_process === true,
    },
    builtin_dispatchers: (s.builtin_dispatchers ?? []).map((d) => ({ ...d })),
    mcp_servers: (s.mcp_servers ?? []).map((m) => ({ ...m, transport: m.transport ?? (m.url ? 'http' : 'stdio') })),
    billing: {
      ...(s.billing?.stripe_secret_key ? { stripe_secret_key: s.billing.stripe_secret_key } : {}),
      ...(s.billing?.api_url ? { api_url: s.billing.api_url } : {}),
      ...(s.billing?.return_url ? { return_url: s.billing.return_url } : {}),
    },
    ...(s.cortex ? { cortex: { ...s.cortex, ...(s.cortex.embedding ? { embedding: { ...s.cortex.embedding } } : {}) } } : {}),
    stimuli: {
      routes: (s.stimuli?.routes ?? []).map((r) => ({ ...r })),
      ...(s.stimuli?.router_agent ? { router_agent: s.stimuli.router_agent } : {}),
      classification_threshold: s.stimuli?.classification_threshold ?? DEFAULTS.classificationThreshold,
      ...(s.stimuli?.ingest_roles ? { ingest_roles: [...s.stimuli.ingest_roles] } : {}),
    },
    dataDir: s.data_dir ? path.resolve(ctx.baseDir, s.data_dir) : path.resolve(ctx.cwd, DEFAULTS.dataDir),
    log: { level: s.log?.level ?? DEFAULTS.logLevel },
    ...(s.volumes ? { volumes: { ...s.volumes } } : {}),
    ...(s.retention ? { retention: { ...s.retention } } : {}),
    ...(s.fuse ? { fuse: { ...s.fuse } } : {}),
    ...(s.metrics ? { metrics: { ...s.metrics } } : {}),
    admission: { ...DEFAULT_ADMISSION, ...s.admission },
    pricing: { currency: s.pricing?.currency ?? DEFAULTS.currency, models: (s.pricing?.models ?? []).map((m) => ({ ...m })) },
    rate_limits: {
      enabled: s.rate_limits?.enabled ?? true,
      per_ip: { ...DEFAULTS.rateLimits.per_ip, ...s.rate_limits?.per_ip },
      per_tenant: { ...DEFAULTS.rateLimits.per_tenant, ...s.rate_limits?.per_tenant },
      per_webhook_source: { ...DEFAULTS.rateLimits.per_webhook_source, ...s.rate_limits?.per_webhook_source },
      exempt_ips: s.rate_limits?.exempt_ips ?? [...DEFAULTS.rateLimits.exempt_ips],
      exempt_tenants: s.rate_limits?.exempt_tenants ?? [...DEFAULTS.rateLimits.exempt_tenants],
    },
  };
  if (s.auth) {
    const { jwks_file, ...rest } = s.auth;
    config.auth = { ...rest, ...(jwks_file ? { jwks_file: path.resolve(ctx.baseDir, jwks_file) } : {}) };
  }
  return config;
}
