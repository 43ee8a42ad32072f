// The workflow manifest after parsing, validation and defaulting (seed 002, format 1.2). parseWorkflowManifest()
// in ./parse.ts is the only producer; the engine, the state runners, templates and conditions read this shape and
// nothing else. Defaults of seed 002 are filled in by the parser, so readers never re-default.

import type { Static } from '@sinclair/typebox';
import {
  CONDITION_TYPES,
  type AGENT_STATE_ISOLATIONS,
  type COMPLETIONS,
  type CONSENSUS_STRATEGIES,
  type IMAGE_PULL_POLICIES,
  type STATE_KINDS,
  type STORAGE_CLASSES,
  type StateVolumeSchema,
  type SUBWORKFLOW_MODES,
  type WorkflowMetadataSchema,
} from './schema.ts';

// Names and the parts parsing leaves as written come from the schema (./schema.ts): one definition each.
export { CONDITION_TYPES };
export type StateKind = (typeof STATE_KINDS)[number];
export type ConditionType = (typeof CONDITION_TYPES)[number];

export interface Transition {
  /** Absent in the YAML means `always`; the parser normalises it. */
  condition: ConditionType;
  target: string;
  /** Handlebars template rendered into `state.feedback` for the next state. */
  feedback?: string;
  threshold?: number;
  agreement?: number;
  /** exit_code and input_equals compare this text exactly. */
  value?: string;
  /** custom: a Handlebars boolean expression. */
  expression?: string;
  min?: number;
  max?: number;
}

export type StateVolume = Static<typeof StateVolumeSchema>;

interface StateCommon {
  /** Default 5, ceiling 20. */
  max_state_visits: number;
  /** Seconds; default 300 (`300s`). Human states: absent means wait indefinitely. */
  timeout_seconds?: number;
  volumes: StateVolume[];
  transitions: Transition[];
}

export interface AgentState extends StateCommon {
  kind: 'Agent';
  agent: string;
  intent?: string;
  input?: string;
  isolation: (typeof AGENT_STATE_ISOLATIONS)[number];
}

export interface SystemState extends StateCommon {
  kind: 'System';
  command: string;
  env: Record<string, string>;
  /** Default `/workspace`. */
  workdir: string;
}

export interface HumanState extends StateCommon {
  kind: 'Human';
  prompt: string;
  default_response?: string;
}

export interface JudgeAgentRef {
  agent: string;
  input?: string;
  /** Default 1.0. */
  weight: number;
  /** Default 60. */
  timeout_seconds: number;
  /** Default 500. */
  poll_interval_ms: number;
}

export type ConsensusStrategy = (typeof CONSENSUS_STRATEGIES)[number];

export interface ConsensusSpec {
  strategy: ConsensusStrategy;
  /** Default 0.7. */
  threshold: number;
  /** `agreement` in the YAML is accepted as an alias. */
  min_agreement_confidence?: number;
  /** Required for best_of_n. */
  n?: number;
  /** Default 1. */
  min_judges_required: number;
  /** Defaults 0.7 / 0.3; they sum to 1.0. */
  confidence_weighting: { agreement_factor: number; self_confidence_factor: number };
}

export interface ParallelAgentsState extends StateCommon {
  kind: 'ParallelAgents';
  agents: JudgeAgentRef[];
  consensus: ConsensusSpec;
}

export interface ContainerVolume {
  /** Matches a workflow-level volume (`workspace` or a shared_volumes name). */
  name: string;
  mount_path: string;
  read_only: boolean;
}

export interface ContainerStep {
  name?: string;
  image: string;
  /** Default IfNotPresent. */
  image_pull_policy: (typeof IMAGE_PULL_POLICIES)[number];
  /** Handlebars allowed per element. */
  command: string[];
  shell: boolean;
  env: Record<string, string>;
  /** Default /workspace. */
  workdir: string;
  volumes: ContainerVolume[];
  resources: { cpu?: number; memory_bytes?: number; /** seconds, default 300 (5m) */ timeout_seconds: number };
  registry_credentials?: string;
}

// ContainerRun's `volumes` are container mounts of workflow-level volumes (ContainerVolume), not Agent mounts.
export interface ContainerRunState extends Omit<StateCommon, 'volumes'>, ContainerStep {
  kind: 'ContainerRun';
  /** Default 1 attempt, backoff 0 seconds (doubles on each further retry). */
  retry: { max_attempts: number; backoff_seconds: number };
}

export interface ParallelContainerRunState extends StateCommon {
  kind: 'ParallelContainerRun';
  /** Each step has a unique `name`. */
  steps: (ContainerStep & { name: string })[];
  completion: (typeof COMPLETIONS)[number];
}

export interface SubworkflowState extends StateCommon {
  kind: 'Subworkflow';
  workflow_id: string;
  mode: (typeof SUBWORKFLOW_MODES)[number];
  result_key?: string;
  input?: string;
}

export type WorkflowState =
  | AgentState
  | SystemState
  | HumanState
  | ParallelAgentsState
  | ContainerRunState
  | ParallelContainerRunState
  | SubworkflowState;

export interface StorageVolumeSpec {
  storage_class: (typeof STORAGE_CLASSES)[number];
  ttl_hours?: number;
  size_limit_mb?: number;
  /** Pre-created volume UUID (persistent shared volumes only). */
  volume_id?: string;
}

export interface WorkflowManifest {
  apiVersion: string;
  kind: 'Workflow';
  metadata: Static<typeof WorkflowMetadataSchema>;
  spec: {
    initial_state: string;
    /** Default 50, ceiling 100. */
    max_total_transitions: number;
    context: Record<string, unknown>;
    storage?: {
      workspace?: StorageVolumeSpec;
      shared_volumes: (StorageVolumeSpec & { name: string })[];
    };
    states: Record<string, WorkflowState>;
  };
}

/** One deterministic validation error: `field` is a path such as `spec.states.build.transitions[0].target`. */
export interface ManifestError {
  field: string;
  message: string;
}

export type ParseResult = { ok: true; manifest: WorkflowManifest } | { ok: false; errors: ManifestError[] };
