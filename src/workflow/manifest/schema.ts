// The JSON Schema (draft-07) of the workflow manifest (seed 002, format 1.2), schema key `workflow/manifest/v1`
// (seed 001 "Versioning"), written once in TypeBox (issue 19): `workflowManifestSchema` is served by orch.schema.get
// and compiled by parseWorkflowManifest() before the semantic checks a schema cannot say well (state references,
// condition fields per condition type, ceilings, unit forms, volume references, consensus weights), and
// `WorkflowManifestFile` (its Static<> type) is the document as written once it passed. Unknown keys are refused at
// every known level except the free-form maps (labels, annotations, context, env, input_schema, output_schema).
//
// Forms people write, normalised by parse.ts:
//   timeouts  300s, 5m, 1h (or a number of seconds)   → timeout_seconds
//   memory    512Mi, 2Gi, 256M (or bytes)              → resources.memory_bytes
//   backoff   0s, 10s, 1m                              → retry.backoff_seconds
import { Type, type Static, type TObject, type TPartial, type TProperties } from '@sinclair/typebox';
import { Const, Discriminated, Enum, FreeObject, StringMap, Types } from '../../util/typebox.ts';

export const WORKFLOW_MANIFEST_SCHEMA_KEY = 'workflow/manifest/v1';

/** Seed 002 "Limits": `metadata.name`. */
export const WORKFLOW_NAME_PATTERN = '^[a-z0-9][a-z0-9-]{0,62}$';

/** Semantic Versioning 2.0.0 (the regular expression semver.org publishes). */
export const SEMVER_PATTERN =
  '^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(?:-((?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\\.(?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\\+([0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*))?$';

export const STATE_KINDS = ['Agent', 'System', 'Human', 'ParallelAgents', 'ContainerRun', 'ParallelContainerRun', 'Subworkflow'] as const;

export const CONDITION_TYPES = [
  'always', 'on_success', 'on_failure', 'exit_code_zero', 'exit_code_non_zero', 'exit_code', 'score_above',
  'score_below', 'score_between', 'confidence_above', 'consensus', 'all_approved', 'any_rejected', 'input_equals',
  'input_equals_yes', 'input_equals_no', 'custom',
] as const;

export const IMAGE_PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;
export const AGENT_STATE_ISOLATIONS = ['inherit', 'firecracker', 'docker', 'process'] as const;
export const CONSENSUS_STRATEGIES = ['weighted_average', 'majority', 'unanimous', 'best_of_n'] as const;
export const COMPLETIONS = ['all_succeed', 'any_succeed', 'best_effort'] as const;
export const SUBWORKFLOW_MODES = ['blocking', 'fire_and_forget'] as const;
export const STORAGE_CLASSES = ['ephemeral', 'persistent'] as const;

const Opt = Type.Optional;
const nonEmpty = (): ReturnType<typeof Type.String> => Type.String({ minLength: 1 });
/** A duration string (`300s`, `5m`, `1h`) or a number of seconds; parse.ts checks the form. */
const duration = (): ReturnType<typeof Types<string | number>> =>
  Types<string | number>(['string', 'number'], { description: 'a duration such as 300s, 5m, 1h (or seconds as a number)' });
const absolutePath = (): ReturnType<typeof Type.String> => Type.String({ pattern: '^/' });
const unit = (): ReturnType<typeof Type.Number> => Type.Number({ minimum: 0, maximum: 1 });

function Closed<T extends TProperties>(properties: T, options: Record<string, unknown> = {}): TObject<T> {
  return Type.Object(properties, { ...options, additionalProperties: false });
}
function Section<T extends TProperties>(properties: T): TPartial<TObject<T>> {
  return Type.Partial(Closed(properties));
}

export const TransitionFileSchema = Closed({
  /** Absent means `always`; the parser normalises it. */
  condition: Opt(Enum(CONDITION_TYPES)),
  target: nonEmpty(),
  feedback: Opt(Type.String()),
  threshold: Opt(unit()),
  agreement: Opt(unit()),
  value: Opt(Types<string | number | boolean>(['string', 'number', 'boolean'])),
  expression: Opt(nonEmpty()),
  min: Opt(unit()),
  max: Opt(unit()),
});

export const StateVolumeSchema = Closed({
  /** Volume reference, Handlebars allowed (`{{workflow.storage.workspace}}`). */
  volume: nonEmpty(),
  mount_path: absolutePath(),
  access_mode: Enum(['read-write', 'read-only'] as const),
});

const ContainerVolumeFile = Closed({
  /** Matches a workflow-level volume (`workspace` or a shared_volumes name). */
  name: nonEmpty(),
  mount_path: absolutePath(),
  read_only: Opt(Type.Boolean()),
});

/** Every kind's common fields. */
const common = {
  max_state_visits: Opt(Type.Integer({ minimum: 1, description: 'default 5, ceiling 20' })),
  timeout: Opt(duration()),
  transitions: Type.Array(TransitionFileSchema),
};
const stateVolumes = { volumes: Opt(Type.Array(StateVolumeSchema)) };

/** The fields of one container (ContainerRun, and each step of ParallelContainerRun). */
const containerFields = {
  name: Opt(nonEmpty()),
  image: nonEmpty(),
  image_pull_policy: Opt(Enum(IMAGE_PULL_POLICIES)),
  command: Type.Array(Type.String(), { minItems: 1 }),
  shell: Opt(Type.Boolean()),
  env: Opt(StringMap()),
  workdir: Opt(absolutePath()),
  volumes: Opt(Type.Array(ContainerVolumeFile)),
  resources: Opt(
    Section({
      cpu: Type.Integer({ minimum: 1, description: 'millicores' }),
      memory: Types<string | number>(['string', 'integer'], { description: 'a limit such as 512Mi or 2Gi' }),
      timeout: duration(),
    }),
  ),
  registry_credentials: Opt(nonEmpty()),
};
export const ContainerFileSchema = Closed(containerFields);
const ContainerStepFile = Closed({ ...containerFields, name: nonEmpty() });

const JudgeAgentFile = Closed({
  agent: nonEmpty(),
  input: Opt(Type.String()),
  weight: Opt(Type.Number({ exclusiveMinimum: 0 })),
  timeout_seconds: Opt(Type.Integer({ minimum: 1 })),
  poll_interval_ms: Opt(Type.Integer({ minimum: 1 })),
});

const ConsensusFile = Closed({
  strategy: Enum(CONSENSUS_STRATEGIES),
  threshold: Opt(unit()),
  min_agreement_confidence: Opt(unit()),
  /** An alias of min_agreement_confidence. */
  agreement: Opt(unit()),
  n: Opt(Type.Integer({ minimum: 1 })),
  min_judges_required: Opt(Type.Integer({ minimum: 1 })),
  confidence_weighting: Opt(Section({ agreement_factor: unit(), self_confidence_factor: unit() })),
});

// One closed object per kind; `kind` and `transitions` come first so `required` lists them first, as before.
const StateFile = Discriminated('kind', {
  Agent: Closed({
    kind: Const('Agent'),
    ...common,
    ...stateVolumes,
    agent: nonEmpty(),
    intent: Opt(Type.String()),
    input: Opt(Type.String()),
    isolation: Opt(Enum(AGENT_STATE_ISOLATIONS)),
  }),
  System: Closed({ kind: Const('System'), ...common, ...stateVolumes, command: nonEmpty(), env: Opt(StringMap()), workdir: Opt(absolutePath()) }),
  Human: Closed({ kind: Const('Human'), ...common, ...stateVolumes, prompt: nonEmpty(), default_response: Opt(Type.String()) }),
  ParallelAgents: Closed({ kind: Const('ParallelAgents'), ...common, ...stateVolumes, agents: Type.Array(JudgeAgentFile, { minItems: 1 }), consensus: ConsensusFile }),
  ContainerRun: Closed({
    kind: Const('ContainerRun'),
    ...common,
    ...containerFields,
    retry: Opt(Section({ max_attempts: Type.Integer({ minimum: 1 }), backoff: duration() })),
  }),
  ParallelContainerRun: Closed({
    kind: Const('ParallelContainerRun'),
    ...common,
    ...stateVolumes,
    steps: Type.Array(ContainerStepFile, { minItems: 1 }),
    completion: Opt(Enum(COMPLETIONS)),
  }),
  Subworkflow: Closed({
    kind: Const('Subworkflow'),
    ...common,
    ...stateVolumes,
    workflow_id: nonEmpty(),
    mode: Opt(Enum(SUBWORKFLOW_MODES)),
    result_key: Opt(nonEmpty()),
    input: Opt(Type.String()),
  }),
});

const storageVolume = {
  storage_class: Opt(Enum(STORAGE_CLASSES)),
  ttl_hours: Opt(Type.Integer({ minimum: 1 })),
  size_limit_mb: Opt(Type.Integer({ minimum: 1 })),
  /** Pre-created volume UUID (persistent shared volumes only). */
  volume_id: Opt(Type.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' })),
};
export const StorageVolumeFileSchema = Closed(storageVolume);

export const WorkflowMetadataSchema = Closed({
  name: Type.String({ pattern: WORKFLOW_NAME_PATTERN }),
  version: Type.String({ pattern: SEMVER_PATTERN, description: 'semantic version, e.g. 1.0.0' }),
  description: Opt(Type.String()),
  labels: Opt(StringMap()),
  annotations: Opt(StringMap()),
  input_schema: Opt(FreeObject()),
  output_schema: Opt(FreeObject()),
  output_template: Opt(StringMap()),
});

export const workflowManifestSchema = Closed(
  {
    apiVersion: Const('orch.dev/v1'),
    kind: Const('Workflow'),
    metadata: WorkflowMetadataSchema,
    spec: Closed({
      initial_state: nonEmpty(),
      max_total_transitions: Opt(Type.Integer({ minimum: 1, description: 'default 50, ceiling 100' })),
      context: Opt(FreeObject()),
      storage: Opt(
        Section({
          workspace: StorageVolumeFileSchema,
          shared_volumes: Type.Array(Closed({ name: Type.String({ pattern: WORKFLOW_NAME_PATTERN }), ...storageVolume })),
        }),
      ),
      states: Type.Unsafe<Record<string, Static<typeof StateFile>>>({ type: 'object', minProperties: 1, additionalProperties: StateFile }),
    }),
  },
  {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: 'https://orch.dev/schemas/workflow/manifest/v1.json',
    title: 'orch Workflow manifest (workflow/manifest/v1, format 1.2)',
  },
);

/** The manifest as written, once the schema passed (optional parts may be absent, quantities in their unit forms). */
export type WorkflowManifestFile = Static<typeof workflowManifestSchema>;
export type StateFile = Static<typeof StateFile>;
export type TransitionFile = Static<typeof TransitionFileSchema>;
export type ContainerFile = Static<typeof ContainerFileSchema>;
export type StorageVolumeFile = Static<typeof StorageVolumeFileSchema>;
