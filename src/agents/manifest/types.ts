// The agent manifest after parsing, validation and defaulting (CONTRACT.md "Agent manifest"). parseAgentManifest()
// in ./parse.ts is the only producer; the execution loop, runtimes and tools read this shape and nothing else.

import type { Static } from '@sinclair/typebox';
import type {
  ExitCodeRuleSchema,
  IMAGE_PULL_POLICIES,
  ISOLATIONS,
  JsonSchemaRuleSchema,
  MetadataSchema,
  NETWORK_MODES,
  SemanticRuleSchema,
  TaskSchema,
  ToolObjectSchema,
  VolumeFileSchema,
} from './schema.ts';

// The parts parsing leaves as written are the schema's own shapes (./schema.ts): one definition each.
export type Isolation = (typeof ISOLATIONS)[number];
export type ImagePullPolicy = (typeof IMAGE_PULL_POLICIES)[number];
export type NetworkMode = (typeof NETWORK_MODES)[number];

/** A rule with its defaults filled in (`expected` 0, `min_score` 0.7). */
export type ValidationRule =
  | Required<Static<typeof ExitCodeRuleSchema>>
  | (Static<typeof SemanticRuleSchema> & { min_score: number })
  | Static<typeof JsonSchemaRuleSchema>;

/** One entry of spec.tools, normalised: a bare name becomes `{ name }`. `config` is free-form beyond the allowlist. */
export type ToolSpec = Omit<Static<typeof ToolObjectSchema>, 'config'> & {
  config?: NonNullable<Static<typeof ToolObjectSchema>['config']> & { [key: string]: unknown };
};

export type VolumeSpec = Omit<Static<typeof VolumeFileSchema>, 'size_limit'> & {
  /** As written (`512Mi`), a number of bytes turned into its decimal text. */
  size_limit?: string;
  /**
   * An existing volume of the execution's tenant to mount instead of making one (never created, never owned by the
   * execution). Set only by the orchestrator (a workflow Agent state's `volumes`, seed 002); the manifest schema
   * refuses it in an agent manifest.
   */
  volume_id?: string;
};

export interface AgentManifest {
  apiVersion: string;
  kind: 'Agent';
  metadata: Static<typeof MetadataSchema>;
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
    task: Static<typeof TaskSchema>;
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
      network: { mode: NetworkMode; allowlist: string[] };
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
