// The JSON Schema (draft-07) of the agent manifest, schema key `agent/manifest/v1` (seed 001 "Versioning"), written
// once in TypeBox (issue 19): `agentManifestSchema` is served by orch.schema.get and compiled by parseAgentManifest()
// before the semantic checks (tool names, runtime pairs, quantities) that a schema cannot express well, and
// `AgentManifestFile` (its Static<> type) is the document as written once it passed. The defaulted AgentManifest of
// ./types.ts reuses these pieces where parsing leaves them as written. Unknown keys are rejected at every known
// level except the free-form maps (labels, annotations, env, tool config, input_data, input_schema, json_schema rules).
//
// Quantities accept the forms people write and parse.ts normalises them:
//   memory  512Mi, 1Gi, 256M, 1000 (bytes)       → spec.security.resources.memory_bytes
//   cpu     "500m" (millicores); a number below 100 is cores (0.5, 2); 100 and above is millicores (1500)
//   timeouts 30 (seconds), "30s", "5m", "1h", "500ms"
import { Type, type Static, type TObject, type TPartial, type TProperties } from '@sinclair/typebox';
import { Const, Discriminated, Enum, FreeObject, MapOf, StringMap, Types } from '../../util/typebox.ts';

export const AGENT_MANIFEST_SCHEMA_KEY = 'agent/manifest/v1';

export const AGENT_NAME_PATTERN = '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$';

export const ISOLATIONS = ['inherit', 'process', 'docker'] as const;
export const IMAGE_PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;
export const NETWORK_MODES = ['none', 'allow', 'deny'] as const;

const Opt = Type.Optional;
const stringList = (): ReturnType<typeof Type.Array<ReturnType<typeof Type.String>>> => Type.Array(Type.String());
const nonEmpty = (): ReturnType<typeof Type.String> => Type.String({ minLength: 1 });
/** Seconds as a number, or a duration string (`30s`, `5m`, `1h`, `500ms`). */
const duration = (): ReturnType<typeof Types<number | string>> =>
  Types<number | string>(['number', 'string'], { description: 'seconds as a number, or a duration string such as 30s, 5m, 1h' });

function Closed<T extends TProperties>(properties: T, options: Record<string, unknown> = {}): TObject<T> {
  return Type.Object(properties, { ...options, additionalProperties: false });
}
function Section<T extends TProperties>(properties: T): TPartial<TObject<T>> {
  return Type.Partial(Closed(properties));
}

export const ExitCodeRuleSchema = Closed({ type: Const('exit_code'), expected: Opt(Type.Integer()) });
export const SemanticRuleSchema = Closed({
  type: Const('semantic'),
  judge_agent: nonEmpty(),
  criteria: Opt(Type.String()),
  min_score: Opt(Type.Number({ minimum: 0, maximum: 1 })),
});
export const JsonSchemaRuleSchema = Closed({ type: Const('json_schema'), schema: FreeObject() });
const ValidationRuleFile = Discriminated('type', { exit_code: ExitCodeRuleSchema, semantic: SemanticRuleSchema, json_schema: JsonSchemaRuleSchema });

/** One entry of spec.tools written as a mapping (a bare name is the other form). */
export const ToolObjectSchema = Closed({
  name: nonEmpty(),
  executor: Opt(nonEmpty()),
  config: Opt(
    Type.Object({
      /** base command → permitted first positional arguments; `[]` or `['*']` permits any. */
      subcommand_allowlist: Opt(MapOf(stringList())),
    }),
  ),
});
// `type: [string, object]` with the object's keywords beside it (they apply to objects only, minLength to strings):
// a bare tool name or the mapping, with one message for either.
const ToolEntryFile = Types<string | Static<typeof ToolObjectSchema>>(['string', 'object'], {
  minLength: 1,
  required: ToolObjectSchema.required,
  properties: ToolObjectSchema.properties,
  additionalProperties: false,
});

export const VolumeFileSchema = Closed({
  name: Type.String({ pattern: AGENT_NAME_PATTERN }),
  storage_class: Opt(Enum(['ephemeral', 'persistent'] as const)),
  mount_path: Type.String({ pattern: '^/' }),
  access_mode: Opt(Enum(['read-write', 'read-only'] as const)),
  size_limit: Opt(Types<string | number>(['string', 'integer'])),
  ttl_hours: Opt(Type.Number({ exclusiveMinimum: 0 })),
});

export const MetadataSchema = Closed({
  name: Type.String({ pattern: AGENT_NAME_PATTERN, description: 'lowercase DNS-like label, at most 63 characters' }),
  version: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._+-]*$' }),
  description: Opt(Type.String()),
  tags: Opt(stringList()),
  labels: Opt(StringMap()),
  annotations: Opt(StringMap()),
});

export const TaskSchema = Closed({
  instruction: nonEmpty(),
  prompt_template: Opt(Type.String()),
  input_data: Opt(Type.Unknown()),
});

const SpecFile = Closed({
  runtime: Closed({
    language: Type.String({ minLength: 1, description: 'python, node, bash, go, or custom (with image)' }),
    version: Opt(nonEmpty()),
    image: Opt(nonEmpty()),
    image_pull_policy: Opt(Enum(IMAGE_PULL_POLICIES)),
    isolation: Opt(Enum(ISOLATIONS)),
    model: Opt(nonEmpty()),
    temperature: Opt(Type.Number({ minimum: 0, maximum: 2 })),
  }),
  task: TaskSchema,
  execution: Opt(
    Section({
      mode: Enum(['one-shot', 'iterative'] as const),
      max_iterations: Type.Integer({ minimum: 1, description: '1 in one-shot mode; default 5 in iterative mode, capped at 20' }),
      llm_timeout_seconds: duration(),
      iteration_timeout: duration(),
      validation: Type.Array(ValidationRuleFile),
      tool_validation: Type.Unsafe<unknown[]>({ type: 'array' }),
      memory: Type.Boolean({ description: 'consult Cortex memory on a failed iteration and store the solution that worked (needs spec.cortex on the node)' }),
    }),
  ),
  security: Opt(
    Section({
      network: Section({ mode: Enum(NETWORK_MODES), allowlist: stringList() }),
      filesystem: Section({ read: stringList(), write: stringList() }),
      resources: Section({
        cpu: Types<string | number>(['string', 'number'], { description: 'millicores: "500m"; a number below 100 is cores (0.5, 2), 100 and above millicores (1500)' }),
        memory: Types<string | number>(['string', 'integer'], { description: '512Mi, 1Gi, 256M or bytes' }),
        timeout: duration(),
      }),
    }),
  ),
  volumes: Opt(Type.Array(VolumeFileSchema)),
  tools: Opt(Type.Array(ToolEntryFile)),
  env: Opt(StringMap()),
  security_context: Opt(nonEmpty()),
  input_schema: Opt(FreeObject()),
  warm_pool_size: Opt(Type.Integer({ minimum: 0 })),
  swarm_enabled: Opt(Type.Boolean()),
  startup_script: Opt(Type.String()),
  bootstrap_path: Opt(Type.String()),
});

export const agentManifestSchema = Closed(
  {
    apiVersion: Const('orch.dev/v1'),
    kind: Const('Agent'),
    metadata: MetadataSchema,
    spec: SpecFile,
  },
  {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: 'https://orch.dev/schemas/agent/manifest/v1.json',
    title: 'orch Agent manifest (agent/manifest/v1)',
  },
);

/** The manifest as written, once the schema passed (optional parts may be absent, quantities in their unit forms). */
export type AgentManifestFile = Static<typeof agentManifestSchema>;
