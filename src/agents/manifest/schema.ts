// The JSON Schema (draft-07) of the agent manifest, schema key `agent/manifest/v1` (seed 001 "Versioning"); served
// by orch.schema.get and checked by parseAgentManifest() before the semantic checks (tool names, runtime pairs,
// quantities) that a schema cannot express well. Unknown keys are rejected at every known level except the
// free-form maps (labels, annotations, env, tool config, input_data, input_schema, json_schema rules).
//
// Quantities accept the forms people write and parse.ts normalises them:
//   memory  512Mi, 1Gi, 256M, 1000 (bytes)       → spec.security.resources.memory_bytes
//   cpu     "500m" (millicores); a number below 100 is cores (0.5, 2); 100 and above is millicores (1500)
//   timeouts 30 (seconds), "30s", "5m", "1h", "500ms"

export const AGENT_MANIFEST_SCHEMA_KEY = 'agent/manifest/v1';

export const AGENT_NAME_PATTERN = '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$';

const stringList = { type: 'array', items: { type: 'string' } } as const;
const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;
/** Seconds as a number, or a duration string (`30s`, `5m`, `1h`, `500ms`). */
const duration = {
  type: ['number', 'string'],
  description: 'seconds as a number, or a duration string such as 30s, 5m, 1h',
} as const;

const validationRule = {
  type: 'object',
  required: ['type'],
  properties: { type: { enum: ['exit_code', 'semantic', 'json_schema'] } },
  allOf: [
    {
      if: { properties: { type: { const: 'exit_code' } }, required: ['type'] },
      then: {
        properties: { type: { const: 'exit_code' }, expected: { type: 'integer' } },
        additionalProperties: false,
      },
    },
    {
      if: { properties: { type: { const: 'semantic' } }, required: ['type'] },
      then: {
        required: ['judge_agent'],
        properties: {
          type: { const: 'semantic' },
          judge_agent: { type: 'string', minLength: 1 },
          criteria: { type: 'string' },
          min_score: { type: 'number', minimum: 0, maximum: 1 },
        },
        additionalProperties: false,
      },
    },
    {
      if: { properties: { type: { const: 'json_schema' } }, required: ['type'] },
      then: {
        required: ['schema'],
        properties: { type: { const: 'json_schema' }, schema: { type: 'object' } },
        additionalProperties: false,
      },
    },
  ],
} as const;

const toolEntry = {
  type: ['string', 'object'],
  minLength: 1,
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1 },
    executor: { type: 'string', minLength: 1 },
    config: {
      type: 'object',
      properties: {
        subcommand_allowlist: { type: 'object', additionalProperties: stringList },
      },
    },
  },
  additionalProperties: false,
} as const;

const volume = {
  type: 'object',
  required: ['name', 'mount_path'],
  properties: {
    name: { type: 'string', pattern: AGENT_NAME_PATTERN },
    storage_class: { enum: ['ephemeral', 'persistent'] },
    mount_path: { type: 'string', pattern: '^/' },
    access_mode: { enum: ['read-write', 'read-only'] },
    size_limit: { type: ['string', 'integer'] },
    ttl_hours: { type: 'number', exclusiveMinimum: 0 },
  },
  additionalProperties: false,
} as const;

export const agentManifestSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://orch.dev/schemas/agent/manifest/v1.json',
  title: 'orch Agent manifest (agent/manifest/v1)',
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    apiVersion: { const: 'orch.dev/v1' },
    kind: { const: 'Agent' },
    metadata: {
      type: 'object',
      required: ['name', 'version'],
      properties: {
        name: { type: 'string', pattern: AGENT_NAME_PATTERN, description: 'lowercase DNS-like label, at most 63 characters' },
        version: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._+-]*$' },
        description: { type: 'string' },
        tags: stringList,
        labels: stringMap,
        annotations: stringMap,
      },
      additionalProperties: false,
    },
    spec: {
      type: 'object',
      required: ['runtime', 'task'],
      properties: {
        runtime: {
          type: 'object',
          required: ['language'],
          properties: {
            language: { type: 'string', minLength: 1, description: 'python, node, bash, go, or custom (with image)' },
            version: { type: 'string', minLength: 1 },
            image: { type: 'string', minLength: 1 },
            image_pull_policy: { enum: ['Always', 'IfNotPresent', 'Never'] },
            isolation: { enum: ['inherit', 'process', 'docker'] },
            model: { type: 'string', minLength: 1 },
            temperature: { type: 'number', minimum: 0, maximum: 2 },
          },
          additionalProperties: false,
        },
        task: {
          type: 'object',
          required: ['instruction'],
          properties: {
            instruction: { type: 'string', minLength: 1 },
            prompt_template: { type: 'string' },
            input_data: {},
          },
          additionalProperties: false,
        },
        execution: {
          type: 'object',
          properties: {
            mode: { enum: ['one-shot', 'iterative'] },
            max_iterations: { type: 'integer', minimum: 1, description: '1 in one-shot mode; default 5 in iterative mode, capped at 20' },
            llm_timeout_seconds: duration,
            iteration_timeout: duration,
            validation: { type: 'array', items: validationRule },
            tool_validation: { type: 'array' },
            memory: { type: 'boolean', description: 'consult Cortex memory on a failed iteration and store the solution that worked (needs spec.cortex on the node)' },
          },
          additionalProperties: false,
        },
        security: {
          type: 'object',
          properties: {
            network: {
              type: 'object',
              properties: {
                mode: { enum: ['none', 'allow', 'deny'] },
                allowlist: stringList,
              },
              additionalProperties: false,
            },
            filesystem: {
              type: 'object',
              properties: { read: stringList, write: stringList },
              additionalProperties: false,
            },
            resources: {
              type: 'object',
              properties: {
                cpu: { type: ['string', 'number'], description: 'millicores: "500m"; a number below 100 is cores (0.5, 2), 100 and above millicores (1500)' },
                memory: { type: ['string', 'integer'], description: '512Mi, 1Gi, 256M or bytes' },
                timeout: duration,
              },
              additionalProperties: false,
            },
          },
          additionalProperties: false,
        },
        volumes: { type: 'array', items: volume },
        tools: { type: 'array', items: toolEntry },
        env: stringMap,
        security_context: { type: 'string', minLength: 1 },
        input_schema: { type: 'object' },
        warm_pool_size: { type: 'integer', minimum: 0 },
        swarm_enabled: { type: 'boolean' },
        startup_script: { type: 'string' },
        bootstrap_path: { type: 'string' },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;
