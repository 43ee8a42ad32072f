// The validated, defaulted node configuration (CONTRACT.md "Node configuration"). loadNodeConfig() in
// ./load.ts is the only producer; everything else receives this object and never reads process.env.
import type { AdmissionConfig } from '../agents/execution/admission.ts';

import type { Static } from '@sinclair/typebox';
import type {
  CortexSchema,
  DispatcherSchema,
  LLM_TYPES,
  LlmModelSchema,
  LlmProviderSchema,
  LOG_LEVELS,
  ModelPriceSchema,
  NODE_ROLES,
  NodeConfigFileSpec,
  RetentionSchema,
  StimulusRouteSchema,
  ToolCapabilitySchema,
} from './schema.ts';

// The sections the defaults leave as written are the file's own shapes (./schema.ts, one definition each).
/** spec.cortex (docs/CORTEX.md). */
export type CortexConfig = Static<typeof CortexSchema>;
export type NodeRoleName = (typeof NODE_ROLES)[number];
export type LlmModel = Static<typeof LlmModelSchema>;
export type LlmProviderType = (typeof LLM_TYPES)[number];
export type LlmProviderConfig = Static<typeof LlmProviderSchema>;
export type DispatcherConfig = Static<typeof DispatcherSchema>;
export type StimulusRoute = Static<typeof StimulusRouteSchema>;
export type ToolCapability = Static<typeof ToolCapabilitySchema>;
/** An external MCP tool server: a local process over stdio, or a remote one over HTTP (transport defaulted). */
export type McpServerConfig = NonNullable<NodeConfigFileSpec['mcp_servers']>[number] & { transport: 'stdio' | 'http' };
export type LogLevel = (typeof LOG_LEVELS)[number];
/** docs/RETENTION.md: what each key deletes and when. */
export type RetentionConfig = Static<typeof RetentionSchema>;
type FileSection<K extends keyof NodeConfigFileSpec> = NonNullable<NodeConfigFileSpec[K]>;

export interface NodeConfig {
  /** metadata.name */
  name: string;
  node: { id: string; role: NodeRoleName; tags: string[]; grpc_address?: string };
  /** health_port: where the liveness thread answers /health/live (absent: no such thread); live_stall_seconds: how
   * long the main loop may be silent before it answers 503 (default DEFAULT_LIVE_STALL_SECONDS). */
  http: { bind: string; port: number; health_port?: number; live_stall_seconds?: number };
  grpc: { port: number };
  grpc_auth: { enabled: boolean; exempt_methods: string[] };
  cluster: {
    cluster_grpc_port: number;
    /**
     * `spec.cluster.controller` as a list: the controllers' cluster gRPC addresses (host:port) a worker joins, in order
     * of preference; it heartbeats to one and moves to the next when that one is unreachable. Absent on a lone
     * hybrid/controller.
     */
    controllers?: string[];
    /**
     * What a worker advertises as its NodeClusterService address (host, or host:port when a port is mapped): for a
     * wildcard bind whose host name does not lead to this node (network namespaces, NAT). Default: the bind address.
     */
    advertise_address?: string;
    heartbeat_interval_seconds: number;
    /** Heartbeats a peer may miss before it is marked UNHEALTHY (default 3). */
    missed_heartbeats?: number;
    /** How long a controller's claim on a workflow run lasts without renewal (default 3); failover takes about the lease. */
    workflow_lease_seconds?: number;
    /**
     * The cluster's join token (a secret; from `env:NAME` or ORCH_CLUSTER_JOIN_TOKEN, never written in the file): a
     * controller admits a node that presents it at AttestNode; a worker presents it. Never logged.
     */
    join_token?: string;
    /** Ed25519 public keys (base64 of the raw 32 bytes) a controller admits without the join token. */
    allowed_node_keys?: string[];
    /** How long a node's claim on an execution row lasts without renewal (default 30). */
    execution_lease_seconds?: number;
    /** How long a controller keeps an execution pending while no ACTIVE worker meets its request (default 60; 0: fail at once). */
    worker_wait_seconds?: number;
  };
  /**
   * Workflow runs: `poll_seconds` is how often a waiting run (a Human state, a child run) re-reads its row as a
   * safety net; an answer given on any node wakes it at once by message (docs/CLUSTER.md "Messages to actors").
   * Default 30. `park_after_seconds`: a run waiting on a Human state that long leaves memory (parked on its row,
   * brought back by a message or the parked-run scan; docs/WORKFLOWS.md "Idle runs are parked"). Default 10.
   */
  workflow?: FileSection<'workflow'>;
  /**
   * Absent url: embedded PGlite under dataDir. startup_wait_seconds: how long a starting node waits for a server
   * that is down (an outage, not a refusal such as bad credentials) before it gives up (default 60; 0: at once).
   */
  database: { url?: string; startup_wait_seconds?: number };
  /** Absent url: in-process bus. startup_wait_seconds as for the database. */
  redis: { url?: string; startup_wait_seconds?: number };
  /** Absent: dev identity mode (keys under dataDir). */
  auth?: FileSection<'auth'>;
  llm_providers: LlmProviderConfig[];
  runtime: {
    default_isolation: 'process' | 'docker';
    docker_host?: string;
    orchestrator_url?: string;
    /** The bubblewrap binary of process isolation; default: `bwrap` on PATH. */
    bwrap_path?: string;
    /** slirp4netns, the user-mode network of process-isolated sandboxes that have network; default: on PATH. */
    slirp4netns_path?: string;
    /** The unprivileged host uid/gid tenant commands (System states) run as; default 65534 (nobody). */
    sandbox_uid: number;
    sandbox_gid: number;
    /** Network inside System state sandboxes; default false (none). */
    system_state_network: boolean;
    /** Process isolation WITHOUT a sandbox (plain child processes on the host): a single trusted developer only;
     * default false, and the node logs a loud warning at start when true. */
    unsandboxed_process: boolean;
  };
  builtin_dispatchers: DispatcherConfig[];
  mcp_servers: McpServerConfig[];
  /** Payment provider (docs/BILLING.md): api_url overrides the provider's address (a test's fake server). */
  billing: FileSection<'billing'>;
  /** Cortex memory (docs/CORTEX.md); absent: Cortex disabled (`Cortex not configured`). */
  cortex?: CortexConfig;
  /** ingest_roles: when set, a bearer caller of POST /v1/stimuli / IngestStimulus needs one of them (else 403 / PERMISSION_DENIED). */
  stimuli?: { routes: StimulusRoute[]; router_agent?: string; classification_threshold: number; ingest_roles?: FileSection<'stimuli'>['ingest_roles'] };
  /** Where PGlite data, dev identity keys and volumes live (ORCH_DATA_DIR, default ./.orch/data). */
  dataDir: string;
  log: { level: LogLevel };
  /** GET /metrics (docs/OBSERVABILITY.md): allow_remote serves peers that are not on loopback too (default false). */
  metrics?: FileSection<'metrics'>;
  /** HTTP rate limits (docs/CONFIG.md "Rate limits"); filled in by the loader (absent only in hand-made configs: defaults). */
  rate_limits?: RateLimitsConfig;
  /** Execution starts: sandboxes made at once and the bounded, per-tenant-fair start queue (docs/CONFIG.md "Admission"); filled in by the loader. */
  admission?: AdmissionConfig;
  /** Model prices for the dashboard's and the stats API's cost figures (docs/CONFIG.md "Model prices"). */
  pricing?: PricingConfig;
  /** Volumes (docs/VOLUMES.md): how often the reaper removes expired ephemeral volumes (default 60 s). */
  volumes?: FileSection<'volumes'>;
  /** History kept in the database (docs/RETENTION.md); absent: everything is kept. */
  retention?: RetentionConfig;
  /**
   * The FUSE daemon (`orch fuse-daemon`, FuseMountService) executions mount their volumes through (docs/FSAL.md
   * "Executions and volumes"). Absent: volumes are bind-mounted from their directories directly.
   */
  fuse?: FileSection<'fuse'>;
}

/** At most `max` requests per fixed window of `window_seconds`. */
export interface RateLimit {
  max: number;
  window_seconds: number;
}

/** One row of the price table: an agent's `spec.runtime.model` alias (or the provider model it maps to) and its prices. */
export type ModelPrice = Static<typeof ModelPriceSchema>;

export interface PricingConfig {
  /** ISO 4217 code the prices are in (default USD). */
  currency: string;
  /** Empty (the default): no prices, the dashboard shows tokens and says cost is not configured. */
  models: ModelPrice[];
}

export interface RateLimitsConfig {
  enabled: boolean;
  /** Every request from one client address, before authentication (loopback exempt by default). */
  per_ip: RateLimit;
  /** Authenticated /v1 requests of one tenant, on every node together when Redis is configured. */
  per_tenant: RateLimit;
  /** POST /v1/webhooks/{source}, per source. */
  per_webhook_source: RateLimit;
  /** Client addresses per_ip does not apply to. Default 127.0.0.1, ::1, ::ffff:127.0.0.1. */
  exempt_ips: string[];
  /** Tenants per_tenant does not apply to. Default orch-system (the operators' own tenant). */
  exempt_tenants: string[];
}
