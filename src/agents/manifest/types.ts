// The agent manifest after parsing, validation and defaulting (CONTRACT.md "Agent manifest"). parseAgentManifest()
// in ./parse.ts is the only producer; the execution loop, runtimes and tools read this shape and nothing else.

export type Isolation = 'process' | 'docker' | 'inherit';
export type ImagePullPolicy = 'Always' | 'IfNotPresent' | 'Never';

export type ValidationRule =
  | { type: 'exit_code'; expected: number }
  | { type: 'semantic'; judge_agent: string; criteria?: string; min_score: number }
  | { type: 'json_schema'; schema: Record<string, unknown> };

/** One entry of spec.tools, normalised: a bare name becomes `{ name }`. */
export interface ToolSpec {
  name: string;
  /** e.g. `builtin:cmd` */
  executor?: string;
  config?: {
    /** base command → permitted first positional arguments; `[]` or `['*']` permits any. */
    subcommand_allowlist?: Record<string, string[]>;
    [key: string]: unknown;
  };
}

export interface VolumeSpec {
  name: string;
  storage_class?: 'ephemeral' | 'persistent';
  mount_path: string;
  access_mode?: 'read-write' | 'read-only';
  size_limit?: string;
  ttl_hours?: number;
  /**
   * An existing volume of the execution's tenant to mount instead of making one (never created, never owned by the
   * execution). Set only by the orchestrator (a workflow Agent state's `volumes`, seed 002); the manifest schema
   * refuses it in an agent manifest.
   */
  volume_id?: string;
}

export interface AgentManifest {
  apiVersion: string;
  kind: 'Agent';
  metadata: {
    name: string;
    version: string;
    description?: string;
    tags?: string[];
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: {
    runtime: {
      language: string;
      version: string;
      image?: string;
      image_pull_policy: ImagePullPolicy;
      isolation: Isolation;
      /** LLM model alias (llm_providers[].models[].alias); default `default`. */
      model: string;
      temperature?: number;
    };
    task: { instruction: string; prompt_template?: string; input_data?: unknown };
    execution: {
      mode: 'one-shot' | 'iterative';
      /** 1 in one-shot mode. */
      max_iterations: number;
      llm_timeout_seconds: number;
      /** seconds */
      iteration_timeout: number;
      validation: ValidationRule[];
      tool_validation?: unknown[];
      /** Cortex memory (docs/JUDGES.md "Memory in the refinement loop"): recall solutions on a failed iteration, store the one that worked. */
      memory?: boolean;
    };
    security: {
      network: { mode: 'none' | 'allow' | 'deny'; allowlist: string[] };
      filesystem: { read: string[]; write: string[] };
      /** cpu in millicores, memory in bytes (parsed from forms like 512Mi), timeout in seconds. */
      resources: { cpu?: number; memory_bytes?: number; timeout: number };
    };
    volumes: VolumeSpec[];
    tools: ToolSpec[];
    env: Record<string, string>;
    security_context?: string;
    input_schema?: Record<string, unknown>;
    warm_pool_size?: number;
    swarm_enabled?: boolean;
    startup_script?: string;
    bootstrap_path?: string;
  };
}

/** One problem found in a manifest; `field` is a dotted path such as `spec.runtime.language`. */
export interface ManifestError {
  field: string;
  message: string;
  /** 1-based line of the YAML text, when known (syntax errors). */
  line?: number;
}
