// The validated, defaulted node configuration (CONTRACT.md "Node configuration"). loadNodeConfig() in
// ./load.ts is the only producer; everything else receives this object and never reads process.env.

export type NodeRoleName = 'hybrid' | 'controller' | 'worker';

export interface LlmModel { alias: string; model: string }
export interface LlmProviderConfig {
  name: string;
  type: 'openai' | 'anthropic';
  endpoint?: string;
  api_key?: string;
  models: LlmModel[];
}

export interface DispatcherConfig {
  name: string;
  config?: Record<string, unknown>;
  capabilities?: ToolCapability[];
}

export interface StimulusRoute { source: string; workflow: string; input_template?: string }

export interface ToolCapability { tool: string; skip_judge?: boolean }

/** An external MCP tool server: a local process over stdio, or a remote one over HTTP. */
export interface McpServerConfig {
  name: string;
  transport: 'stdio' | 'http';
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  url?: string;
  headers?: Record<string, string>;
  capabilities?: ToolCapability[];
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface NodeConfig {
  /** metadata.name */
  name: string;
  node: { id: string; role: NodeRoleName; tags: string[]; grpc_address?: string };
  http: { bind: string; port: number };
  grpc: { port: number };
  grpc_auth: { enabled: boolean; exempt_methods: string[] };
  cluster: {
    cluster_grpc_port: number;
    /** host:port of the controller's cluster gRPC a worker joins; absent on a lone hybrid/controller. */
    controller?: string;
    heartbeat_interval_seconds: number;
    /** Heartbeats a peer may miss before it is marked UNHEALTHY (default 3). */
    missed_heartbeats?: number;
  };
  /** Absent url: embedded PGlite under dataDir. */
  database: { url?: string };
  /** Absent url: in-process bus. */
  redis: { url?: string };
  /** Absent: dev identity mode (keys under dataDir). */
  auth?: { issuer?: string; audience?: string; jwks_url?: string; jwks_file?: string; clock_tolerance_seconds?: number };
  llm_providers: LlmProviderConfig[];
  runtime: { default_isolation: 'process' | 'docker'; docker_host?: string; orchestrator_url?: string };
  builtin_dispatchers: DispatcherConfig[];
  mcp_servers: McpServerConfig[];
  billing: { stripe_secret_key?: string };
  stimuli?: { routes: StimulusRoute[]; router_agent?: string; classification_threshold: number };
  /** Where PGlite data, dev identity keys and volumes live (ORCH_DATA_DIR, default ./.orch/data). */
  dataDir: string;
  log: { level: LogLevel };
}
