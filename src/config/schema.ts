// JSON Schema of the NodeConfig YAML (CONTRACT.md "Node configuration", docs/CONFIG.md). Every object refuses
// unknown keys so a typo stops start-up instead of being silently ignored; the only free-form maps are a
// dispatcher's own `config` and string-to-string maps (env, headers). Defaults live in ./defaults.ts, not here,
// because some depend on the environment (node id, data dir). `x-expect` is a human phrase for pattern errors.
import { Type, type Static } from '@sinclair/typebox';
import type { CortexConfig, LogLevel, RetentionConfig } from './types.ts';

export const API_VERSION = 'orch.dev/v1';
export const KIND = 'NodeConfig';
export const NODE_ROLES = ['hybrid', 'controller', 'worker'] as const;
export const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
export const ISOLATIONS = ['process', 'docker'] as const;
export const LLM_TYPES = ['openai', 'anthropic'] as const;

/** Node ids end up in log lines, row keys and gRPC metadata: keep them to a safe alphabet. */
export const NODE_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$';
export const PORT = { type: 'integer', minimum: 0, maximum: 65535 } as const;

const nonEmpty = { type: 'string', minLength: 1 } as const;
const httpUrl = { type: 'string', pattern: '^https?://[^\\s]+$', 'x-expect': 'an http:// or https:// URL' } as const;
/** host:port, or [IPv6]:port. */
export const HOST_PORT_PATTERN = '^[^\\s:,]+:[0-9]{1,5}$|^\\[[0-9A-Fa-f:.]+\\]:[0-9]{1,5}$';
const hostPort = { type: 'string', pattern: HOST_PORT_PATTERN, 'x-expect': 'host:port' } as const;
const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;

function obj(properties: Record<string, unknown>, required: string[] = []): Record<string, unknown> {
  return { type: 'object', additionalProperties: false, properties, ...(required.length ? { required } : {}) };
}

/**
 * One limit: at most `max` requests per fixed window of `window_seconds` (docs/CONFIG.md "Rate limits").
 * Written in TypeBox (issue 19, "one definition per shape"): the JSON Schema below and the file's TypeScript type
 * (NodeConfigFile['spec']['rate_limits']) are one definition. The rest of this file moves the same way section by
 * section.
 */
const RateLimitFile = Type.Object(
  { max: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000_000 })), window_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })) },
  { additionalProperties: false },
);
const RateLimitsFile = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    per_ip: Type.Optional(RateLimitFile),
    per_tenant: Type.Optional(RateLimitFile),
    per_webhook_source: Type.Optional(RateLimitFile),
    exempt_ips: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    exempt_tenants: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  },
  { additionalProperties: false },
);

const capability = obj({ tool: nonEmpty, skip_judge: { type: 'boolean' } }, ['tool']);

const spec = obj({
  node: obj({
    id: { type: 'string', pattern: NODE_ID_PATTERN, 'x-expect': 'letters, digits, ".", "_" or "-" (at most 63)' },
    role: { enum: NODE_ROLES },
    tags: { type: 'array', items: nonEmpty },
    grpc_address: hostPort,
  }),
  http: obj({ bind: nonEmpty, port: PORT }),
  grpc: obj({ port: PORT }),
  grpc_auth: obj({
    enabled: { type: 'boolean' },
    exempt_methods: {
      type: 'array',
      items: { type: 'string', pattern: '^/[A-Za-z0-9_.]+/[A-Za-z0-9_]+$', 'x-expect': 'a full gRPC method name like /pkg.Service/Method' },
    },
  }),
  cluster: obj({
    cluster_grpc_port: PORT,
    // One host:port, a list, or a comma-separated string: checked by ./controllers.ts (checks.ts), which can say
    // which entry is wrong — a schema union would report only its first branch's complaint.
    controller: {},
    advertise_address: {
      type: 'string',
      pattern: '^[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]{1,5})?$|^\\[[0-9A-Fa-f:.]+\\](:[0-9]{1,5})?$',
      'x-expect': 'a host name or IP address, optionally with :port ([addr] for IPv6)',
    },
    heartbeat_interval_seconds: { type: 'number', exclusiveMinimum: 0, maximum: 3600 },
    missed_heartbeats: { type: 'integer', minimum: 1, maximum: 1000 },
    workflow_lease_seconds: { type: 'number', minimum: 1, maximum: 3600 },
    // The join credential (docs/CLUSTER.md "Joining"): a controller admits a node that presents this token or whose
    // key is listed; a worker presents the token. The token must come from the environment (checks.ts).
    join_token: { type: 'string', minLength: 16, pattern: '^[\\x21-\\x7e]+$', 'x-expect': 'at least 16 printable ASCII characters, no spaces' },
    allowed_node_keys: { type: 'array', items: nonEmpty },
    execution_lease_seconds: { type: 'number', minimum: 1, maximum: 3600 },
    worker_wait_seconds: { type: 'number', minimum: 0, maximum: 86400 },
  }),
  // docs/CONFIG.md "spec.workflow": the safety-net poll of waiting runs (wake-ups come by message, TellActor).
  workflow: obj({
    poll_seconds: { type: 'number', minimum: 0.05, maximum: 86400 },
  }),
  database: obj({
    url: { type: 'string', pattern: '^postgres(ql)?://', 'x-expect': 'a postgres:// or postgresql:// URL' },
    startup_wait_seconds: { type: 'number', minimum: 0, maximum: 86400 },
  }),
  redis: obj({
    url: { type: 'string', pattern: '^rediss?://', 'x-expect': 'a redis:// or rediss:// URL' },
    startup_wait_seconds: { type: 'number', minimum: 0, maximum: 86400 },
  }),
  auth: obj({
    issuer: nonEmpty,
    audience: nonEmpty,
    jwks_url: httpUrl,
    jwks_file: nonEmpty,
    clock_tolerance_seconds: { type: 'integer', minimum: 0, maximum: 300 },
  }),
  llm_providers: {
    type: 'array',
    items: obj(
      {
        name: nonEmpty,
        type: { enum: LLM_TYPES },
        endpoint: httpUrl,
        api_key: nonEmpty,
        models: { type: 'array', items: obj({ alias: nonEmpty, model: nonEmpty }, ['alias', 'model']) },
      },
      ['name', 'type', 'models'],
    ),
  },
  runtime: obj({
    default_isolation: { enum: ISOLATIONS },
    docker_host: nonEmpty,
    orchestrator_url: httpUrl,
    bwrap_path: nonEmpty,
    slirp4netns_path: nonEmpty,
    sandbox_uid: { type: 'integer', minimum: 1, maximum: 2147483647 },
    sandbox_gid: { type: 'integer', minimum: 1, maximum: 2147483647 },
    system_state_network: { type: 'boolean' },
    unsandboxed_process: { type: 'boolean' },
  }),
  builtin_dispatchers: {
    type: 'array',
    items: obj(
      {
        name: nonEmpty,
        // Each dispatcher owns the shape of its own config; it validates it when it starts.
        config: { type: 'object' },
        capabilities: { type: 'array', items: capability },
      },
      ['name'],
    ),
  },
  mcp_servers: {
    type: 'array',
    items: obj(
      {
        name: nonEmpty,
        transport: { enum: ['stdio', 'http'] },
        command: nonEmpty,
        args: { type: 'array', items: { type: 'string' } },
        env: stringMap,
        url: httpUrl,
        headers: stringMap,
        capabilities: { type: 'array', items: capability },
      },
      ['name'],
    ),
  },
  billing: obj({ stripe_secret_key: nonEmpty, api_url: httpUrl, return_url: httpUrl }),
  // Cortex memory (docs/CORTEX.md): present (even `{}`) enables it with the local embedding.
  cortex: obj({
    embedding: obj(
      { type: { enum: ['local', 'openai'] }, endpoint: httpUrl, api_key: nonEmpty, model: nonEmpty, dimensions: { type: 'integer', minimum: 8, maximum: 8192 } },
      ['type'],
    ),
    dedup_threshold: { type: 'number', minimum: 0, maximum: 1 },
    max_candidates: { type: 'integer', minimum: 1, maximum: 1000000 },
  }),
  stimuli: obj({
    routes: {
      type: 'array',
      items: obj({ source: nonEmpty, workflow: nonEmpty, input_template: { type: 'string' } }, ['source', 'workflow']),
    },
    router_agent: nonEmpty,
    classification_threshold: { type: 'number', minimum: 0, maximum: 1 },
    ingest_roles: { type: 'array', minItems: 1, items: { enum: ['operator', 'tenant-admin', 'user'] } },
  }),
  data_dir: nonEmpty,
  log: obj({ level: { enum: LOG_LEVELS } }),
  volumes: obj({ reaper_interval_seconds: { type: 'number', exclusiveMinimum: 0, maximum: 86400 } }),
  retention: obj({
    terminal_runs_hours: { type: 'number', exclusiveMinimum: 0, maximum: 876000 },
    stimuli_hours: { type: 'number', exclusiveMinimum: 0, maximum: 876000 },
    interval_seconds: { type: 'number', minimum: 1, maximum: 86400 },
    batch_size: { type: 'integer', minimum: 1, maximum: 100000 },
  }),
  fuse: obj({ address: nonEmpty }, ['address']),
  metrics: obj({ allow_remote: { type: 'boolean' } }),
  rate_limits: RateLimitsFile,
});

export const nodeConfigSchema = obj(
  {
    apiVersion: { const: API_VERSION },
    kind: { const: KIND },
    metadata: obj({ name: { type: 'string', pattern: NODE_ID_PATTERN, 'x-expect': 'letters, digits, ".", "_" or "-" (at most 63)' } }),
    spec,
  },
  ['apiVersion', 'kind'],
);

/** The file as it is after validation: every key optional, shapes as in the schema. */
export interface NodeConfigFile {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata?: { name?: string };
  spec?: NodeConfigFileSpec;
}

export interface NodeConfigFileSpec {
  node?: { id?: string; role?: (typeof NODE_ROLES)[number]; tags?: string[]; grpc_address?: string };
  http?: { bind?: string; port?: number };
  grpc?: { port?: number };
  grpc_auth?: { enabled?: boolean; exempt_methods?: string[] };
  cluster?: { cluster_grpc_port?: number; controller?: string | string[]; advertise_address?: string; heartbeat_interval_seconds?: number; missed_heartbeats?: number; workflow_lease_seconds?: number; join_token?: string; allowed_node_keys?: string[]; execution_lease_seconds?: number; worker_wait_seconds?: number };
  workflow?: { poll_seconds?: number };
  database?: { url?: string; startup_wait_seconds?: number };
  redis?: { url?: string; startup_wait_seconds?: number };
  auth?: { issuer?: string; audience?: string; jwks_url?: string; jwks_file?: string; clock_tolerance_seconds?: number };
  llm_providers?: { name: string; type: (typeof LLM_TYPES)[number]; endpoint?: string; api_key?: string; models: { alias: string; model: string }[] }[];
  runtime?: {
    default_isolation?: (typeof ISOLATIONS)[number];
    docker_host?: string;
    orchestrator_url?: string;
    bwrap_path?: string;
    slirp4netns_path?: string;
    sandbox_uid?: number;
    sandbox_gid?: number;
    system_state_network?: boolean;
    unsandboxed_process?: boolean;
  };
  builtin_dispatchers?: { name: string; config?: Record<string, unknown>; capabilities?: { tool: string; skip_judge?: boolean }[] }[];
  mcp_servers?: {
    name: string;
    transport?: 'stdio' | 'http';
    command?: string;
    args?: string[];
    env?: Record<string, string>;
    url?: string;
    headers?: Record<string, string>;
    capabilities?: { tool: string; skip_judge?: boolean }[];
  }[];
  billing?: { stripe_secret_key?: string; api_url?: string; return_url?: string };
  cortex?: CortexConfig;
  stimuli?: { routes?: { source: string; workflow: string; input_template?: string }[]; router_agent?: string; classification_threshold?: number; ingest_roles?: ('operator' | 'tenant-admin' | 'user')[] };
  data_dir?: string;
  log?: { level?: LogLevel };
  volumes?: { reaper_interval_seconds?: number };
  retention?: RetentionConfig;
  fuse?: { address: string };
  metrics?: { allow_remote?: boolean };
  rate_limits?: Static<typeof RateLimitsFile>;
}
