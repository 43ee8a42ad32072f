// The request shapes of every /v1 route (issue 19): body, query string and path parameters, each written once in
// TypeBox. installRequestSchemas() attaches them to the routes as they are registered (an onRoute hook, so the
// route files keep their handlers and this one table says what each accepts), which makes fastify validate them
// (a 400 in the one error body naming the field: `invalid request: body/input must be string`) and @fastify/swagger
// describe them in GET /openapi.json.
//
// - Handlers take their request types from this table (`RequestOf<'POST /v1/executions'>`: the `Static<>` types of
//   the schemas below, path parameters read from the URL), so what a handler may assume is what was validated.
// - A JSON body is validated whatever the Content-Type says (a text/plain string is `body must be object`, an absent
//   body is `null`): `maybe()` marks the bodies that may be left out. A deploy's body is JSON or the YAML text, each
//   validated by its content type. A webhook's raw bytes, a SEAL envelope read as bytes and a file upload are not
//   parsed by fastify and are checked by their handlers (HMAC first, the envelope's signature first): for those the
//   schema describes the body (`described()`) without a validator, and their handlers get `unknown`.
// - Objects stay open (no additionalProperties: false): an unknown field is ignored as it always was.
// - Path parameters come from the URL itself (`:id` → `{ id: string }`) unless a route says more.
// - Query values stay strings: intParam (query-params.ts) reads numbers as decimal digits only and names the
//   parameter and its range; ajv's coercion (off, app.ts) would take `0x10` and `1e3` as numbers.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifySchemaValidationError, RouteOptions } from 'fastify';
import type { FsalOperation } from '../../fsal/events.ts';
import { Enum } from '../../util/typebox.ts';
import { ExactValidationMessage } from './errors.ts';
import type { ReplyOf } from './response-schemas.ts';
import { ExecutionListQuery, IdParams, NameParams, PageQuery, WorkflowRunListQuery } from './route-schemas.ts';

/** Content types whose body is the manifest's YAML text itself (a deploy's other form). */
export const YAML_TYPES = ['application/yaml', 'text/yaml', 'application/x-yaml', 'text/x-yaml'];

const Opt = Type.Optional;
const str = (description: string, options: Record<string, unknown> = {}) => Type.String({ description, ...options });
/** A boolean as deploy-input.ts's flag() reads it: true/false, their texts, 1/0, empty (true) or null (false). */
const flag = (description: string) => Type.Union([Type.Boolean(), Type.String({ enum: ['true', 'false', '1', '0', ''] }), Type.Null()], { description });

/** A JSON body that may be left out (or sent as `null`): the handler reads it as `body ?? {}`. */
const maybe = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()], { description: `${schema.description ?? 'A JSON object'}; may be left out` });
/** Bodies fastify does not parse as JSON: described only (their handlers check them, see above). */
const described = <C extends Record<string, TSchema>>(types: C) => ({ described: true as const, content: Object.fromEntries(Object.entries(types).map(([t, schema]) => [t, { schema }])) });

// Bodies --------------------------------------------------------------------------------------------------------

export const DeployBody = Type.Object({
  manifest_yaml: str('The manifest as YAML (or send the YAML itself as application/yaml, options in the query)'),
  force: Opt(flag('Replace an existing name and version')),
  scope: Opt(str('Registry scope: user, tenant or global (workflows), tenant or global (agents)')),
});
const YamlManifest = str('The manifest YAML itself');
/** JSON or the YAML itself, each validated by its content type (a text/plain body is a string too). */
const deployBody = {
  content: { 'application/json': { schema: DeployBody }, ...(Object.fromEntries(YAML_TYPES.map((t) => [t, { schema: YamlManifest }])) as Record<string, { schema: typeof YamlManifest }>) },
};
export const DeployQuery = Type.Object({ force: Opt(str('true/false: replace an existing name and version (YAML bodies)')), scope: Opt(str('Registry scope (YAML bodies)')) });

const StartExecutionBody = Type.Object({
  agent_id: str('The agent to run: a UUID or a name'),
  input: str('The task input'),
  context_json: Opt(Type.Unknown({ description: 'Context for the run: a JSON text or any JSON value' })),
  context_overrides: Opt(Type.Unknown({ description: 'Alias of context_json' })),
  intent: Opt(Type.Unknown()),
});
const ExecuteAgentBody = Type.Omit(StartExecutionBody, ['agent_id']);

const RunWorkflowBody = Type.Object({
  input: Opt(Type.Unknown({ description: 'Checked against the workflow\'s input_schema' })),
  intent: Opt(Type.Unknown({ description: 'A sentence for the run\'s agents' })),
  blackboard: Opt(Type.Unknown({ description: 'Initial blackboard entries (an object)' })),
  version: Opt(str('A deployed version; default the latest')),
});
const SignalBody = Type.Object({ response: str('The answer to the waiting Human state (available to templates as {{human.feedback}})') });
const ApproveBody = Type.Object({ feedback: Opt(Type.Union([Type.String(), Type.Null()], { description: 'Passed to the next state' })), approved_by: Opt(Type.Unknown({ description: 'Default: the caller' })) });
const RejectBody = Type.Object({ reason: str('Why (required, not blank)'), rejected_by: Opt(Type.Unknown({ description: 'Default: the caller' })) });
const DrainBody = Type.Object({ reason: Opt(str('Shown in the node list', { maxLength: 500 })) });
/** An optional non-empty string; `null` is the same as leaving it out. */
const optionalName = (description: string) => Opt(Type.Union([Type.String({ minLength: 1 }), Type.Null()], { description }));
const ScopeChangeBody = Type.Object({
  target_scope: optionalName('user, tenant or global'),
  user_id: optionalName('The user of a user-scoped workflow'),
  version: optionalName('One version; default all'),
});
const StimulusBody = Type.Object({
  source: Type.Unknown({ description: 'The source name (a route of spec.stimuli.routes)' }),
  content: Type.Unknown({ description: 'The event: a JSON text or any JSON value' }),
  idempotency_key: Opt(Type.Unknown({ description: 'Or the X-Idempotency-Key header' })),
  headers: Opt(Type.Unknown({ description: 'Headers of the original event (an object of strings)' })),
});
const httpUrl = (description: string) => Opt(Type.Union([Type.String({ pattern: '^https?://\\S+$' }), Type.Null()], { description }));
const CheckoutBody = Type.Object({
  price_id: str('The plan\'s price', { minLength: 1 }),
  seat_price_id: optionalName('The per-seat price (needed when seats > 0)'),
  seats: Opt(Type.Union([Type.Integer({ minimum: 0, maximum: 10_000 }), Type.Null()], { description: 'Additional seats' })),
  success_url: httpUrl('Where the provider sends the browser back (http or https)'),
  cancel_url: httpUrl('Where the provider sends the browser on cancel (http or https)'),
});
const PortalBody = Type.Object({}, { description: 'No fields: the portal returns to the configured return_url' });
const CreateVolumeBody = Type.Object({
  label: Opt(str('A name for people')),
  size_limit_bytes: Type.Integer({ minimum: 1, description: 'The quota' }),
  storage_class: Opt(str('ephemeral or persistent')),
  ttl_hours: Opt(Type.Number({ description: 'Ephemeral volumes: hours before the reaper removes it' })),
});
const RenameVolumeBody = Type.Object({ label: str('The new label', { minLength: 1 }) });
const MkdirBody = Type.Object({ path: str('Absolute path in the volume', { minLength: 1 }), parents: Opt(flag('Create missing parents (default true)')) });
const MoveBody = Type.Object({ from: str('Source path', { minLength: 1 }), to: str('Destination path', { minLength: 1 }), overwrite: Opt(flag('Replace an existing destination')) });
const DispatchBody = Type.Object(
  { type: Opt(str('generate, tool_call, …')), execution_id: Opt(Type.Unknown({ description: 'The execution the bootstrap runs (required)' })) },
  { description: 'A message of a running execution\'s bootstrap (docs/AGENTS.md)' },
);
const McpBody = Type.Unknown({ description: 'A JSON-RPC 2.0 request of the Model Context Protocol (Streamable HTTP, JSON responses)' });
const SealEnvelope = Type.Object(
  { payload: Opt(Type.Unknown()), signature: Opt(Type.String()), security_token: Opt(Type.String()) },
  { description: 'A SEAL envelope (docs/SEAL.md): read as bytes, its signature checked before anything else', additionalProperties: true },
);
const AttestBody = Type.Object(
  { agent_id: Opt(Type.String()), execution_id: Opt(Type.String()), container_id: Opt(Type.String()), agent_public_key: Opt(Type.String()) },
  { description: 'An attestation request (docs/SEAL.md): read as bytes', additionalProperties: true },
);
const RawBytes = Type.String({ format: 'binary', description: 'Any bytes' });

// Query strings ---------------------------------------------------------------------------------------------------

/** A boolean query flag as flag() (deploy-input.ts) reads it. */
const flagQuery = (description: string) => Opt(Enum(['true', 'false', '1', '0', ''], { description }));
const VersionQuery = Type.Object({ version: Opt(str('One version; default the latest (or all, for a delete)')) });
const PathQuery = Type.Object({ path: Opt(str('Absolute path in the volume; default /')) });
const RequiredPathQuery = Type.Object({ path: str('Absolute path in the volume', { minLength: 1 }) });
/** The StorageEvent operations (fsal/events.ts). */
export const FSAL_OPERATIONS = ['lookup', 'getattr', 'readdir', 'read', 'write', 'create', 'remove', 'rename', 'mkdir', 'rmdir'] as const satisfies readonly FsalOperation[];

/**
 * Request schemas by `METHOD /url` exactly as the route is registered. `messages` replaces the schema's wording for
 * a field where a seed fixes the error body (a JSON pointer into the body, or `''` for a missing field's parent).
 */
export const REQUEST_SCHEMAS = {
  'POST /v1/agents': { body: deployBody, querystring: DeployQuery },
  'GET /v1/agents/:id': { querystring: VersionQuery },
  'PUT /v1/agents/:id': { body: deployBody, querystring: DeployQuery, params: IdParams },
  'DELETE /v1/agents/:id': { querystring: VersionQuery },
  'POST /v1/agents/:id/execute': { body: ExecuteAgentBody },
  // Seed 000: `Invalid agent ID` whenever agent_id is not a UUID (a number, or left out, is not one either).
  'POST /v1/executions': { body: StartExecutionBody, messages: { '/agent_id': 'Invalid agent ID' } },
  'GET /v1/executions': { querystring: ExecutionListQuery },
  'GET /v1/executions/:id': { params: IdParams },
  'GET /v1/executions/:id/logs': { querystring: PageQuery, params: IdParams },
  'GET /v1/executions/:id/stream': { querystring: Type.Object({ follow: Opt(Enum(['true', 'false'], { description: 'false: only the events so far, then the stream ends' })) }) },
  'POST /v1/workflows': { body: deployBody, querystring: DeployQuery },
  'GET /v1/workflows': { querystring: Type.Object({ scope: Opt(Enum(['visible', 'user', 'tenant', 'global'], { description: 'visible (default): every workflow the caller may run' })) }) },
  'GET /v1/workflows/:name': { querystring: VersionQuery, params: NameParams },
  'DELETE /v1/workflows/:name': { querystring: VersionQuery, params: NameParams },
  'POST /v1/workflows/:name/run': { body: maybe(RunWorkflowBody), params: NameParams },
  'POST /v1/workflows/:name/promote': { body: maybe(ScopeChangeBody), params: NameParams },
  'POST /v1/workflows/:name/demote': { body: maybe(ScopeChangeBody), params: NameParams },
  'GET /v1/workflows/executions': { querystring: WorkflowRunListQuery },
  'GET /v1/workflows/executions/:id': { params: IdParams },
  'GET /v1/workflows/executions/:id/logs': { querystring: PageQuery, params: IdParams },
  'POST /v1/workflows/executions/:id/signal': { body: SignalBody },
  'POST /v1/human-approvals/:id/approve': { body: maybe(ApproveBody) },
  'POST /v1/human-approvals/:id/reject': { body: RejectBody },
  'POST /v1/cluster/nodes/:node_id/drain': { body: maybe(DrainBody) },
  'POST /v1/cluster/nodes/:node_id/undrain': { body: maybe(DrainBody) },
  'GET /v1/cluster/nodes': { querystring: Type.Object({ status: Opt(str('A node status such as ACTIVE or DRAINING (any case)')) }) },
  'GET /v1/stats/history': { querystring: Type.Object({ minutes: Opt(str('The window in minutes (default 60)')) }) },
  'GET /v1/stats/usage': {
    querystring: Type.Object({ minutes: Opt(str('The window in minutes (default 60)')), scope: Opt(Enum(['tenant', 'cluster'], { description: 'cluster: every tenant (operator role)' })) }),
  },
  'POST /v1/stimuli': { body: StimulusBody },
  'GET /v1/stimuli': { querystring: Type.Object({ source: Opt(Type.String()), status: Opt(Type.String()), limit: Opt(str('1 to 200')), offset: Opt(Type.String()) }) },
  'POST /v1/webhooks/:source': { body: described({ 'application/json': Type.Unknown({ description: 'The event as the source sends it (any content type; the HMAC is over the raw bytes)' }), 'application/octet-stream': RawBytes }) },
  'POST /v1/billing/checkout': { body: CheckoutBody },
  'POST /v1/billing/portal': { body: maybe(PortalBody) },
  'POST /v1/volumes': { body: CreateVolumeBody },
  'GET /v1/volumes': { querystring: Type.Object({ limit: Opt(str('1 to 1000')), offset: Opt(Type.String()), owner_kind: Opt(Type.String()), owner_ref: Opt(Type.String()) }) },
  'PATCH /v1/volumes/:id': { body: RenameVolumeBody },
  'GET /v1/volumes/:id/events': {
    querystring: Type.Object({
      limit: Opt(str('1 to 200')),
      offset: Opt(Type.String()),
      execution_id: Opt(str('Only the events of this execution (a UUID)', { pattern: '^[0-9a-fA-F-]{36}$' })),
      operation: Opt(Enum(FSAL_OPERATIONS, { description: 'Only this operation' })),
    }),
  },
  'GET /v1/volumes/:id/files': { querystring: PathQuery },
  'GET /v1/volumes/:id/files/stat': { querystring: RequiredPathQuery },
  'GET /v1/volumes/:id/files/content': { querystring: RequiredPathQuery },
  'PUT /v1/volumes/:id/files/content': {
    body: described({ 'application/octet-stream': RawBytes }),
    querystring: Type.Object({ path: str('Absolute path in the volume', { minLength: 1 }), exclusive: flagQuery('true: fail if the file exists') }),
  },
  'DELETE /v1/volumes/:id/files': { querystring: Type.Object({ path: str('Absolute path in the volume', { minLength: 1 }), recursive: flagQuery('true: remove a directory and its contents') }) },
  'POST /v1/volumes/:id/files/mkdir': { body: MkdirBody },
  'POST /v1/volumes/:id/files/move': { body: MoveBody },
  'POST /v1/dispatch-gateway': { body: maybe(DispatchBody) },
  'POST /v1/mcp': { body: McpBody },
  'POST /v1/seal/attest': { body: described({ 'application/json': AttestBody }) },
  'POST /v1/seal/invoke': { body: described({ 'application/json': SealEnvelope }) },
  'POST /v1/invoke': { body: described({ 'application/json': SealEnvelope }) },
} as const satisfies Record<string, RouteRequest>;

interface RouteRequest {
  body?: TSchema | { content: Record<string, { schema: TSchema }>; described?: true };
  querystring?: TSchema;
  params?: TSchema;
  messages?: Record<string, string>;
}

type Table = typeof REQUEST_SCHEMAS;
/** The names of a URL's path parameters: `/v1/volumes/:id/files` → `'id'`. */
type ParamNames<U extends string> = U extends `${string}:${infer P}/${infer Rest}` ? P | ParamNames<`/${Rest}`> : U extends `${string}:${infer P}` ? P : never;
type UrlOf<K extends string> = K extends `${string} ${infer U}` ? U : never;
type BodyOf<B> = B extends { described: true }
  ? unknown
  : B extends { content: infer C }
    ? { [T in keyof C]: C[T] extends { schema: infer S extends TSchema } ? Static<S> : never }[keyof C] | undefined
    : B extends TSchema
      ? Static<B>
      : undefined;
type Part<K extends string, P extends keyof RouteRequest> = K extends keyof Table ? (Table[K] extends { [Q in P]: infer S } ? S : undefined) : undefined;

/**
 * The request types of the route `K` (`'POST /v1/executions'`) as fastify's route generic: the `Static<>` types of
 * its schemas in the table, its path parameters from the URL. Only what the schemas check; anything else is unknown.
 */
export type RequestOf<K extends string> = {
  Params: Part<K, 'params'> extends TSchema ? Static<Part<K, 'params'>> : { [N in ParamNames<UrlOf<K>>]: string };
  Querystring: Part<K, 'querystring'> extends TSchema ? Static<Part<K, 'querystring'>> : unknown;
  Body: K extends keyof Table ? BodyOf<Part<K, 'body'>> : unknown;
  /** The documented 2xx answer (response-schemas.ts); error answers are thrown, never returned. */
  Reply: ReplyOf<K>;
};

/** `/v1/volumes/:id/files` → `{ id: string }`. */
function pathParams(url: string): TSchema | undefined {
  const names = [...url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
  if (names.length === 0) return undefined;
  return Type.Object(Object.fromEntries(names.map((n) => [n, n === 'id' ? IdParams.properties.id : Type.String()])));
}

/**
 * Attaches the request schemas to every /v1 route registered after it. A route's own schema wins for a part it
 * sets itself. Raw-body routes get their body in the OpenAPI document only (openapi.ts reads `x-described-body`).
 */
export function installRequestSchemas(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    if (!route.url.startsWith('/v1/')) return;
    for (const method of [route.method].flat()) {
      if (method === 'HEAD' || method === 'OPTIONS') continue;
      const key = `${method} ${route.url}`;
      const given: RouteRequest = (REQUEST_SCHEMAS as Record<string, RouteRequest>)[key] ?? {};
      const schema: Record<string, unknown> = { ...(route.schema ?? {}) };
      const params = given.params ?? pathParams(route.url);
      if (params && schema.params === undefined) schema.params = params;
      if (given.querystring && schema.querystring === undefined) schema.querystring = given.querystring;
      if (given.body && schema.body === undefined) {
        if ('described' in given.body) schema['x-described-body'] = { content: given.body.content };
        else schema.body = given.body;
      }
      route.schema = schema;
      if (given.messages) route.schemaErrorFormatter = seedMessages(given.messages);
    }
  });
}

/**
 * A route's schemaErrorFormatter for the fields whose error body a seed fixes: a failure on one of them (or its
 * absence) answers that message; every other failure keeps the usual `invalid request: …` wording.
 */
function seedMessages(messages: Record<string, string>): (errors: FastifySchemaValidationError[], dataVar: string) => Error {
  return (errors, dataVar) => {
    for (const e of errors) {
      const missing = (e.params as { missingProperty?: unknown } | undefined)?.missingProperty;
      const field = typeof missing === 'string' ? `${e.instancePath}/${missing}` : e.instancePath;
      const fixed = messages[field];
      if (fixed !== undefined) return new ExactValidationMessage(fixed);
    }
    // fastify's own wording (its defaultSchemaErrorFormatter).
    return new Error(errors.map((e) => `${dataVar}${e.instancePath} ${e.message ?? 'is invalid'}`).join(', '));
  };
}
