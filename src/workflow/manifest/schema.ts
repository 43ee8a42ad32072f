// The JSON Schema (draft-07) of the workflow manifest (seed 002, format 1.2), schema key `workflow/manifest/v1`
// (seed 001 "Versioning"); served by orch.schema.get and checked by parseWorkflowManifest() before the semantic
// checks a schema cannot say well (state references, condition fields per condition type, ceilings, unit forms,
// volume references, consensus weights). Unknown keys are refused at every known level except the free-form maps
// (labels, annotations, context, env, input_schema, output_schema).
//
// Forms people write, normalised by parse.ts:
//   timeouts  300s, 5m, 1h (or a number of seconds)   → timeout_seconds
//   memory    512Mi, 2Gi, 256M (or bytes)              → resources.memory_bytes
//   backoff   0s, 10s, 1m                              → retry.backoff_seconds

import { CONDITION_TYPES } from './types.ts';

export const WORKFLOW_MANIFEST_SCHEMA_KEY = 'workflow/manifest/v1';

/** Seed 002 "Limits": `metadata.name`. */
export const WORKFLOW_NAME_PATTERN = '^[a-z0-9][a-z0-9-]{0,62}$';

/** Semantic Versioning 2.0.0 (the regular expression semver.org publishes). */
export const SEMVER_PATTERN =
  '^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(?:-((?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\\.(?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\\+([0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*))?$';

export const STATE_KINDS = ['Agent', 'System', 'Human', 'ParallelAgents', 'ContainerRun', 'ParallelContainerRun', 'Subworkflow'] as const;

const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;
/** A duration string (`300s`, `5m`, `1h`) or a number of seconds; parse.ts checks the form. */
const duration = { type: ['string', 'number'], description: 'a duration such as 300s, 5m, 1h (or seconds as a number)' } as const;
const absolutePath = { type: 'string', pattern: '^/' } as const;
const unit = { type: 'number', minimum: 0, maximum: 1 } as const;

const transition = {
  type: 'object',
  required: ['target'],
  properties: {
    condition: { enum: [...CONDITION_TYPES] },
    target: { type: 'string', minLength: 1 },
    feedback: { type: 'string' },
    threshold: unit,
    agreement: unit,
    value: { type: ['string', 'number', 'boolean'] },
    expression: { type: 'string', minLength: 1 },
    min: unit,
    max: unit,
  },
  additionalProperties: false,
} as const;

const stateVolume = {
  type: 'object',
  required: ['volume', 'mount_path', 'access_mode'],
  properties: {
    volume: { type: 'string', minLength: 1 },
    mount_path: absolutePath,
    access_mode: { enum: ['read-write', 'read-only'] },
  },
  additionalProperties: false,
} as const;

const containerVolume = {
  type: 'object',
  required: ['name', 'mount_path'],
  properties: {
    name: { type: 'string', minLength: 1 },
    mount_path: absolutePath,
    read_only: { type: 'boolean' },
  },
  additionalProperties: false,
} as const;

const common = {
  kind: { enum: [...STATE_KINDS] },
  max_state_visits: { type: 'integer', minimum: 1, description: 'default 5, ceiling 20' },
  timeout: duration,
  transitions: { type: 'array', items: transition },
} as const;

/** The fields of one container (ContainerRun, and each step of ParallelContainerRun). */
const containerFields = {
  name: { type: 'string', minLength: 1 },
  image: { type: 'string', minLength: 1 },
  image_pull_policy: { enum: ['Always', 'IfNotPresent', 'Never'] },
  command: { type: 'array', minItems: 1, items: { type: 'string' } },
  shell: { type: 'boolean' },
  env: stringMap,
  workdir: absolutePath,
  volumes: { type: 'array', items: containerVolume },
  resources: {
    type: 'object',
    properties: {
      cpu: { type: 'integer', minimum: 1, description: 'millicores' },
      memory: { type: ['string', 'integer'], description: 'a limit such as 512Mi or 2Gi' },
      timeout: duration,
    },
    additionalProperties: false,
  },
  registry_credentials: { type: 'string', minLength: 1 },
} as const;

const judgeAgent = {
  type: 'object',
  required: ['agent'],
  properties: {
    agent: { type: 'string', minLength: 1 },
    input: { type: 'string' },
    weight: { type: 'number', exclusiveMinimum: 0 },
    timeout_seconds: { type: 'integer', minimum: 1 },
    poll_interval_ms: { type: 'integer', minimum: 1 },
  },
  additionalProperties: false,
} as const;

const consensus = {
  type: 'object',
  required: ['strategy'],
  properties: {
    strategy: { enum: ['weighted_average', 'majority', 'unanimous', 'best_of_n'] },
    threshold: unit,
    min_agreement_confidence: unit,
    agreement: unit,
    n: { type: 'integer', minimum: 1 },
    min_judges_required: { type: 'integer', minimum: 1 },
    confidence_weighting: {
      type: 'object',
      properties: { agreement_factor: unit, self_confidence_factor: unit },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;

function kindRule(kind: (typeof STATE_KINDS)[number], required: string[], properties: Record<string, unknown>): Record<string, unknown> {
  return {
    if: { properties: { kind: { const: kind } }, required: ['kind'] },
    then: { required: ['kind', 'transitions', ...required], properties: { ...common, ...properties }, additionalProperties: false },
  };
}

const state = {
  type: 'object',
  required: ['kind'],
  properties: { kind: common.kind },
  allOf: [
    kindRule('Agent', ['agent'], {
      volumes: { type: 'array', items: stateVolume },
      agent: { type: 'string', minLength: 1 },
      intent: { type: 'string' },
      input: { type: 'string' },
      isolation: { enum: ['inherit', 'firecracker', 'docker', 'process'] },
    }),
    kindRule('System', ['command'], {
      volumes: { type: 'array', items: stateVolume },
      command: { type: 'string', minLength: 1 },
      env: stringMap,
      workdir: absolutePath,
    }),
    kindRule('Human', ['prompt'], {
      volumes: { type: 'array', items: stateVolume },
      prompt: { type: 'string', minLength: 1 },
      default_response: { type: 'string' },
    }),
    kindRule('ParallelAgents', ['agents', 'consensus'], {
      volumes: { type: 'array', items: stateVolume },
      agents: { type: 'array', minItems: 1, items: judgeAgent },
      consensus,
    }),
    kindRule('ContainerRun', ['image', 'command'], {
      ...containerFields,
      retry: {
        type: 'object',
        properties: { max_attempts: { type: 'integer', minimum: 1 }, backoff: duration },
        additionalProperties: false,
      },
    }),
    kindRule('ParallelContainerRun', ['steps'], {
      volumes: { type: 'array', items: stateVolume },
      steps: {
        type: 'array',
        minItems: 1,
        items: { type: 'object', required: ['name', 'image', 'command'], properties: containerFields, additionalProperties: false },
      },
      completion: { enum: ['all_succeed', 'any_succeed', 'best_effort'] },
    }),
    kindRule('Subworkflow', ['workflow_id'], {
      volumes: { type: 'array', items: stateVolume },
      workflow_id: { type: 'string', minLength: 1 },
      mode: { enum: ['blocking', 'fire_and_forget'] },
      result_key: { type: 'string', minLength: 1 },
      input: { type: 'string' },
    }),
  ],
} as const;

const storageVolume = {
  storage_class: { enum: ['ephemeral', 'persistent'] },
  ttl_hours: { type: 'integer', minimum: 1 },
  size_limit_mb: { type: 'integer', minimum: 1 },
  volume_id: { type: 'string', pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' },
} as const;

export const workflowManifestSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://orch.dev/schemas/workflow/manifest/v1.json',
  title: 'orch Workflow manifest (workflow/manifest/v1, format 1.2)',
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    apiVersion: { const: 'orch.dev/v1' },
    kind: { const: 'Workflow' },
    metadata: {
      type: 'object',
      required: ['name', 'version'],
      properties: {
        name: { type: 'string', pattern: WORKFLOW_NAME_PATTERN },
        version: { type: 'string', pattern: SEMVER_PATTERN, description: 'semantic version, e.g. 1.0.0' },
        description: { type: 'string' },
        labels: stringMap,
        annotations: stringMap,
        input_schema: { type: 'object' },
        output_schema: { type: 'object' },
        output_template: stringMap,
      },
      additionalProperties: false,
    },
    spec: {
      type: 'object',
      required: ['initial_state', 'states'],
      properties: {
        initial_state: { type: 'string', minLength: 1 },
        max_total_transitions: { type: 'integer', minimum: 1, description: 'default 50, ceiling 100' },
        context: { type: 'object' },
        storage: {
          type: 'object',
          properties: {
            workspace: { type: 'object', properties: storageVolume, additionalProperties: false },
            shared_volumes: {
              type: 'array',
              items: {
                type: 'object',
                required: ['name'],
                properties: { name: { type: 'string', pattern: WORKFLOW_NAME_PATTERN }, ...storageVolume },
                additionalProperties: false,
              },
            },
          },
          additionalProperties: false,
        },
        states: { type: 'object', minProperties: 1, additionalProperties: state },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;
