// JSON Schema of the NodeConfig YAML (CONTRACT.md "Node configuration", docs/CONFIG.md), written once in TypeBox
// (issue 19): `nodeConfigSchema` is what ajv compiles (./validate.ts) and `NodeConfigFile` (its Static<> type) is the
// file's shape after validation; the pieces types.ts shares with the defaulted NodeConfig are exported from here too.
// Every object refuses unknown keys so a typo stops start-up instead of being silently ignored; the only free-form
// maps are a dispatcher's own `config` and string-to-string maps (env, headers). Defaults live in ./defaults.ts, not
// here, because some depend on the environment (node id, data dir). `x-expect` is a human phrase for pattern errors.
import { Type, type Static, type TObject, type TPartial, type TProperties } from '@sinclair/typebox';
import { Const, Enum, FreeObject, StringMap } from '../util/typebox.ts';

export const API_VERSION = 'orch.dev/v1';
export const KIND = 'NodeConfig';
export const NODE_ROLES = ['hybrid', 'controller', 'worker'] as const;
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const ISOLATIONS = ['process', 'docker'] as const;
export const LLM_TYPES = ['openai', 'anthropic'] as const;
export const INGEST_ROLES = ['operator', 'tenant-admin', 'user'] as const;

/** Node ids end up in log lines, row keys and gRPC metadata: keep them to a safe alphabet. */
export const NODE_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$';
const NODE_ID_EXPECT = 'letters, digits, ".", "_" or "-" (at most 63)';
export const PORT = Type.Integer({ minimum: 0, maximum: 65535 });

const Opt = Type.Optional;
const nonEmpty = (): ReturnType<typeof Type.String> => Type.String({ minLength: 1 });
const httpUrl = (): ReturnType<typeof Type.String> => Type.String({ pattern: '^https?://[^\\s]+$', 'x-expect': 'an http:// or https:// URL' });
/** host:port, or [IPv6]:port. */
export const HOST_PORT_PATTERN = '^[^\\s:,]+:[0-9]{1,5}$|^\\[[0-9A-Fa-f:.]+\\]:[0-9]{1,5}$';
const hostPort = (): ReturnType<typeof Type.String> => Type.String({ pattern: HOST_PORT_PATTERN, 'x-expect': 'host:port' });
const seconds = (minimum: number, maximum: number): ReturnType<typeof Type.Number> => Type.Number({ minimum, maximum });

/** An object that refuses unknown keys; the keys not wrapped in Opt are required. */
function Closed<T extends TProperties>(properties: T): TObject<T> {
  return Type.Object(properties, { additionalProperties: false });
}
/** A closed object whose keys are all optional (most sections of the file). */
function Section<T extends TProperties>(properties: T): TPartial<TObject<T>> {
  return Type.Partial(Closed(properties));
}

/** One limit: at most `max` requests per fixed window of `window_seconds` (docs/CONFIG.md "Rate limits"). */
const RateLimitFile = Section({ max: Type.Integer({ minimum: 1, maximum: 100_000_000 }), window_seconds: Type.Integer({ minimum: 1, maximum: 86_400 }) });
const RateLimitsFile = Section({
  enabled: Type.Boolean(),
  per_ip: RateLimitFile,
  per_tenant: RateLimitFile,
  per_webhook_source: RateLimitFile,
  exempt_ips: Type.Array(nonEmpty()),
  exempt_tenants: Type.Array(nonEmpty()),
});

/**
 * The price table behind the dashboard's cost figures (docs/CONFIG.md "Model prices"): per model, the price of 1,000
 * input (prompt) and 1,000 output (completion) tokens in `currency`. `model` is an agent's `spec.runtime.model` alias
 * or the provider model it maps to.
 */
export const ModelPriceSchema = Closed({
  model: nonEmpty(),
  input_per_1k: Type.Number({ minimum: 0, maximum: 1_000_000 }),
  output_per_1k: Type.Number({ minimum: 0, maximum: 1_000_000 }),
});
const PricingFile = Section({
  currency: Type.String({ pattern: '^[A-Z]{3}$', 'x-expect': 'an ISO 4217 code such as USD' }),
  models: Type.Array(ModelPriceSchema, { maxItems: 1000 }),
});

export const ToolCapabilitySchema = Closed({ tool: nonEmpty(), skip_judge: Opt(Type.Boolean()) });
export const LlmModelSchema = Closed({ alias: nonEmpty(), model: nonEmpty() });
export const LlmProviderSchema = Closed({
  name: nonEmpty(),
  type: Enum(LLM_TYPES),
  endpoint: Opt(httpUrl()),
  api_key: Opt(nonEmpty()),
  models: Type.Array(LlmModelSchema),
});
export const DispatcherSchema = Closed({
  name: nonEmpty(),
  // Each dispatcher owns the shape of its own config; it validates it when it starts.
  config: Opt(FreeObject()),
  capabilities: Opt(Type.Array(ToolCapabilitySchema)),
});
const McpServerFile = Closed({
  name: nonEmpty(),
  transport: Opt(Enum(['stdio', 'http'] as const)),
  command: Opt(nonEmpty()),
  args: Opt(Type.Array(Type.String())),
  env: Opt(StringMap()),
  url: Opt(httpUrl()),
  headers: Opt(StringMap()),
  capabilities: Opt(Type.Array(ToolCapabilitySchema)),
});
export const StimulusRouteSchema = Closed({ source: nonEmpty(), workflow: nonEmpty(), input_template: Opt(Type.String()) });
/** spec.cortex (docs/CORTEX.md): present (even `{}`) enables Cortex memory with the local embedding. */
export const CortexSchema = Section({
  embedding: Closed({
    type: Enum(['local', 'openai'] as const),
    endpoint: Opt(httpUrl()),
    api_key: Opt(nonEmpty()),
    model: Opt(nonEmpty()),
    dimensions: Opt(Type.Integer({ minimum: 8, maximum: 8192 })),
  }),
  /** Cosine similarity at or above which a stored pattern raises an existing one's weight (default 0.72). */
  dedup_threshold: Type.Number({ minimum: 0, maximum: 1 }),
  /** Most patterns of one tenant compared per query (default 20000). */
  max_candidates: Type.Integer({ minimum: 1, maximum: 1000000 }),
});
/**
 * How long terminal history is kept (docs/RETENTION.md). Each node deletes, every `interval_seconds`, in batches of
 * `batch_size`: workflow runs and agent executions that ended more than `terminal_runs_hours` ago (with their events,
 * approvals and journal), stimuli older than `stimuli_hours`, and idempotency keys that have expired. An absent
 * `*_hours` keeps that kind forever.
 */
export const RetentionSchema = Section({
  terminal_runs_hours: Type.Number({ exclusiveMinimum: 0, maximum: 876000 }),
  stimuli_hours: Type.Number({ exclusiveMinimum: 0, maximum: 876000 }),
  interval_seconds: seconds(1, 86400),
  batch_size: Type.Integer({ minimum: 1, maximum: 100000 }),
});
export const AuthSchema = Section({
  issuer: nonEmpty(),
  audience: nonEmpty(),
  jwks_url: httpUrl(),
  jwks_file: nonEmpty(),
  clock_tolerance_seconds: Type.Integer({ minimum: 0, maximum: 300 }),
});
export const BillingSchema = Section({ stripe_secret_key: nonEmpty(), api_url: httpUrl(), return_url: httpUrl() });

const Spec = Section({
  node: Section({
    id: Type.String({ pattern: NODE_ID_PATTERN, 'x-expect': NODE_ID_EXPECT }),
    role: Enum(NODE_ROLES),
    tags: Type.Array(nonEmpty()),
    grpc_address: hostPort(),
  }),
  // health_port: /health/live answered by a thread of its own (docs/CONFIG.md "Health port"); live_stall_seconds: how
  // long the main event loop may stay silent before that answer turns 503.
  http: Section({ bind: nonEmpty(), port: PORT, health_port: PORT, live_stall_seconds: seconds(0.2, 3600) }),
  grpc: Section({ port: PORT }),
  grpc_auth: Section({
    enabled: Type.Boolean(),
    exempt_methods: Type.Array(Type.String({ pattern: '^/[A-Za-z0-9_.]+/[A-Za-z0-9_]+$', 'x-expect': 'a full gRPC method name like /pkg.Service/Method' })),
  }),
  cluster: Section({
    cluster_grpc_port: PORT,
    // One host:port, a list, or a comma-separated string: checked by ./controllers.ts (checks.ts), which can say
    // which entry is wrong — a schema union would report only its first branch's complaint.
    controller: Type.Unsafe<string | string[]>({}),
    advertise_address: Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]{1,5})?$|^\\[[0-9A-Fa-f:.]+\\](:[0-9]{1,5})?$',
      'x-expect': 'a host name or IP address, optionally with :port ([addr] for IPv6)',
    }),
    heartbeat_interval_seconds: Type.Number({ exclusiveMinimum: 0, maximum: 3600 }),
    missed_heartbeats: Type.Integer({ minimum: 1, maximum: 1000 }),
    workflow_lease_seconds: seconds(1, 3600),
    // The join credential (docs/CLUSTER.md "Joining"): a controller admits a node that presents this token or whose
    // key is listed; a worker presents the token. The token must come from the environment (checks.ts).
    join_token: Type.String({ minLength: 16, pattern: '^[\\x21-\\x7e]+$', 'x-expect': 'at least 16 printable ASCII characters, no spaces' }),
    allowed_node_keys: Type.Array(nonEmpty()),
    execution_lease_seconds: seconds(1, 3600),
    worker_wait_seconds: seconds(0, 86400),
  }),
  // docs/CONFIG.md "spec.workflow": the safety-net poll of waiting runs (wake-ups come by message, TellActor), and
  // how long a run waits on a Human state before it is parked (leaves memory; docs/WORKFLOWS.md).
  workflow: Section({ poll_seconds: seconds(0.05, 86400), park_after_seconds: seconds(0, 86400) }),
  database: Section({
    url: Type.String({ pattern: '^postgres(ql)?://', 'x-expect': 'a postgres:// or postgresql:// URL' }),
    startup_wait_seconds: seconds(0, 86400),
  }),
  redis: Section({
    url: Type.String({ pattern: '^rediss?://', 'x-expect': 'a redis:// or rediss:// URL' }),
    startup_wait_seconds: seconds(0, 86400),
  }),
  auth: AuthSchema,
  llm_providers: Type.Array(LlmProviderSchema),
  runtime: Section({
    default_isolation: Enum(ISOLATIONS),
    docker_host: nonEmpty(),
    orchestrator_url: httpUrl(),
    bwrap_path: nonEmpty(),
    slirp4netns_path: nonEmpty(),
    sandbox_uid: Type.Integer({ minimum: 1, maximum: 2147483647 }),
    sandbox_gid: Type.Integer({ minimum: 1, maximum: 2147483647 }),
    system_state_network: Type.Boolean(),
    unsandboxed_process: Type.Boolean(),
  }),
  builtin_dispatchers: Type.Array(DispatcherSchema),
  mcp_servers: Type.Array(McpServerFile),
  billing: BillingSchema,
  cortex: CortexSchema,
  stimuli: Section({
    routes: Type.Array(StimulusRouteSchema),
    router_agent: nonEmpty(),
    classification_threshold: Type.Number({ minimum: 0, maximum: 1 }),
    ingest_roles: Type.Array(Enum(INGEST_ROLES), { minItems: 1 }),
  }),
  data_dir: nonEmpty(),
  log: Section({ level: Enum(LOG_LEVELS) }),
  volumes: Section({ reaper_interval_seconds: Type.Number({ exclusiveMinimum: 0, maximum: 86400 }) }),
  retention: RetentionSchema,
  fuse: Closed({ address: nonEmpty() }),
  metrics: Section({ allow_remote: Type.Boolean() }),
  rate_limits: RateLimitsFile,
  // Execution starts (docs/CONFIG.md "Admission"): how many sandboxes are made at once, how many wait.
  admission: Section({
    max_concurrent_starts: Type.Integer({ minimum: 1, maximum: 1024 }),
    max_queued: Type.Integer({ minimum: 1, maximum: 1000000 }),
    max_queued_per_tenant: Type.Integer({ minimum: 1, maximum: 1000000 }),
    retry_after_seconds: Type.Integer({ minimum: 1, maximum: 3600 }),
  }),
  // Model prices for cost figures (docs/CONFIG.md "Model prices").
  pricing: PricingFile,
});

export const nodeConfigSchema = Closed({
  apiVersion: Const(API_VERSION),
  kind: Const(KIND),
  metadata: Opt(Section({ name: Type.String({ pattern: NODE_ID_PATTERN, 'x-expect': NODE_ID_EXPECT }) })),
  spec: Opt(Spec),
});

/** The file as it is after validation: every key optional, shapes as in the schema. */
export type NodeConfigFile = Static<typeof nodeConfigSchema>;
export type NodeConfigFileSpec = Static<typeof Spec>;
