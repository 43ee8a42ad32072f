// The request shapes of every /v1 route (issue 19): body, query string and path parameters, each written once in
// TypeBox. installRequestSchemas() attaches them to the routes as they are registered (an onRoute hook, so the
// route files keep their handlers and this one table says what each accepts), which makes fastify validate them
// (a 400 in the one error body naming the field: `invalid request: body/input must be string`) and @fastify/swagger
// describe them in GET /openapi.json.
//
// - JSON bodies are validated under `content: { 'application/json': … }`: a YAML deploy body, a webhook's raw bytes
//   or a SEAL envelope read as bytes are not JSON-parsed by fastify and are checked by their handlers (HMAC first,
//   the envelope's signature first), so for those the schema describes the body without a JSON validator.
// - Objects stay open (no additionalProperties: false): an unknown field is ignored as it always was.
// - Path parameters come from the URL itself (`:id` → `{ id: string }`) unless a route says more.
// - Query values stay strings: intParam (query-params.ts) reads numbers as decimal digits only and names the
//   parameter and its range; ajv's coercion (off, app.ts) would take `0x10` and `1e3` as numbers.
import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { YAML_TYPES } from './deploy-input.ts';
import { ExecutionListQuery, IdParams, NameParams, PageQuery, WorkflowRunListQuery } from './route-schemas.ts';

const Opt = Type.Optional;
const str = (description: string, options: Record<string, unknown> = {}) => Type.String({ description, ...options });
/** A boolean as deploy-input.ts's flag() reads it: true/false, their texts, 1/0, empty (true) or null (false). */
const flag = (description: string) => Type.Union([Type.Boolean(), Type.String({ enum: ['true', 'false', '1', '0', ''] }), Type.Null()], { description });

/** A body fastify parses as JSON and validates. */
const json = (schema: TSchema) => ({ content: { 'application/json': { schema } } });
/** Bodies fastify does not parse as JSON: described only (their handlers check them, see above). */
const described = (types: Record<string, TSchema>) => ({ content: Object.fromEntries(Object.entries(types).map(([t, schema]) => [t, { schema }])) });

// Bodies --------------------------------------------------------------------------------------------------------

export const DeployBody = Type.Object({
  manifest_yaml: str('The manifest as YAML (or send the YAML itself as application/yaml, options in the query)'),
  force: Opt(flag('Replace an existing name and version')),
  scope: Opt(str('Registry scope: user, tenant or global (workflows), tenant or global (agents)')),
});
const YamlManifest = str('The manifest YAML itself');
const deployBody = { content: { 'application/json': { schema: DeployBody }, ...Object.fromEntries(YAML_TYPES.map((t) => [t, { schema: YamlManifest }])) } };
const DeployQuery = Type.Object({ force: Opt(str('true/false: replace an existing name and version (YAML bodies)')), scope: Opt(str('Registry scope (YAML bodies)')) });

export const StartExecutionBody = Type.Object({
  agent_id: str('The agent to run: a UUID or a name'),
  input: str('The task input'),
  context_json: Opt(Type.Unknown({ description: 'Context for the run: a JSON text or any JSON value' })),
  context_overrides: Opt(Type.Unknown({ description: 'Alias of context_json' })),
  intent: Opt(Type.Unknown()),
});
const ExecuteAgentBody = Type.Omit(StartExecutionBody, ['agent_id']);

export const RunWorkflowBody = Type.Object({
  input: Opt(Type.Unknown({ description: 'Checked against the workflow\'s input_schema' })),
  intent: Opt(Type.Unknown({ description: 'A sentence for the run\'s agents' })),
  blackboard: Opt(Type.Unknown({ description: 'Initial blackboard entries (an object)' })),
  version: Opt(str('A deployed version; default the latest')),
});
const SignalBody = Type.Object({ response: Opt(Type.Unknown({ description: 'The answer to the waiting Human state (a string, or a value its template reads)' })) });
const ApproveBody = Type.Object({ feedback: Opt(Type.Union([Type.String(), Type.Null()], { description: 'Passed to the next state' })), approved_by: Opt(Type.Unknown({ description: 'Default: the caller' })) });
const RejectBody = Type.Object({ reason: str('Why (required, not blank)'), rejected_by: Opt(Type.Unknown({ description: 'Default: the caller' })) });
const DrainBody = Type.Object({ reason: Opt(str('Shown in the node list', { maxLength: 500 })) });
const ScopeChangeBody = Type.Object({
  target_scope: Opt(str('user, tenant or global')),
  user_id: Opt(str('The user of a user-scoped workflow')),
  version: Opt(str('One version; default all')),
});
const StimulusBody = Type.Object({
  source: Type.Unknown({ description: 'The source name (a route of spec.stimuli.routes)' }),
  content: Type.Unknown({ description: 'The event: a JSON text or any JSON value' }),
  idempotency_key: Opt(Type.Unknown({ description: 'Or the X-Idempotency-Key header' })),
  headers: Opt(Type.Unknown({ description: 'Headers of the original event (an object of strings)' })),
});
const CheckoutBody = Type.Object({
  price_id: str('The plan\'s price'),
  seat_price_id: Opt(str('The per-seat price')),
  seats: Opt(Type.Union([Type.Integer({ minimum: 0, maximum: 10_000 }), Type.Null()])),
  success_url: Opt(str('Where the provider sends the browser back')),
  cancel_url: Opt(str('Where the provider sends the browser on cancel')),
});
const PortalBody = Type.Object({ return_url: Opt(str('Where the portal sends the browser back')) });
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

const VersionQuery = Type.Object({ version: Opt(str('One version; default the latest (or all, for a delete)')) });
const PathQuery = (required: boolean) => Type.Object({ path: required ? str('Absolute path in the volume') : Opt(str('Absolute path in the volume; default /')) });

/** Request schemas by `METHOD /url` exactly as the route is registered. */
export const REQUEST_SCHEMAS: Record<string, { body?: unknown; querystring?: TSchema; params?: TSchema }> = {
  'POST /v1/agents': { body: deployBody, querystring: DeployQuery },
  'PUT /v1/agents/:id': { body: deployBody, querystring: DeployQuery, params: IdParams },
  'DELETE /v1/agents/:id': { querystring: VersionQuery },
  'POST /v1/agents/:id/execute': { body: json(ExecuteAgentBody) },
  'POST /v1/executions': { body: json(StartExecutionBody) },
  'GET /v1/executions': { querystring: ExecutionListQuery },
  'GET /v1/executions/:id/logs': { querystring: PageQuery },
  'GET /v1/executions/:id/stream': { querystring: Type.Object({ follow: Opt(str('false: only the events so far, then the stream ends')) }) },
  'POST /v1/workflows': { body: deployBody, querystring: DeployQuery },
  'GET /v1/workflows': { querystring: Type.Object({ scope: Opt(str('visible (default), user, tenant or global')) }) },
  'GET /v1/workflows/:name': { querystring: VersionQuery, params: NameParams },
  'DELETE /v1/workflows/:name': { querystring: VersionQuery, params: NameParams },
  'POST /v1/workflows/:name/run': { body: json(RunWorkflowBody), params: NameParams },
  'POST /v1/workflows/:name/promote': { body: json(ScopeChangeBody), params: NameParams },
  'POST /v1/workflows/:name/demote': { body: json(ScopeChangeBody), params: NameParams },
  'GET /v1/workflows/executions': { querystring: WorkflowRunListQuery },
  'GET /v1/workflows/executions/:id/logs': { querystring: PageQuery },
  'POST /v1/workflows/executions/:id/signal': { body: json(SignalBody) },
  'POST /v1/human-approvals/:id/approve': { body: json(ApproveBody) },
  'POST /v1/human-approvals/:id/reject': { body: json(RejectBody) },
  'POST /v1/cluster/nodes/:node_id/drain': { body: json(DrainBody) },
  'POST /v1/cluster/nodes/:node_id/undrain': { body: json(DrainBody) },
  'GET /v1/cluster/nodes': { querystring: Type.Object({ status: Opt(str('A node status such as ACTIVE or DRAINING (any case)')) }) },
  'GET /v1/stats/history': { querystring: Type.Object({ minutes: Opt(str('The window in minutes (default 60)')) }) },
  'POST /v1/stimuli': { body: json(StimulusBody) },
  'GET /v1/stimuli': { querystring: Type.Object({ source: Opt(Type.String()), status: Opt(Type.String()), limit: Opt(str('1 to 200')), offset: Opt(Type.String()) }) },
  'POST /v1/webhooks/:source': { body: described({ 'application/json': Type.Unknown({ description: 'The event as the source sends it (any content type; the HMAC is over the raw bytes)' }), 'application/octet-stream': RawBytes }) },
  'POST /v1/billing/checkout': { body: json(CheckoutBody) },
  'POST /v1/billing/portal': { body: json(PortalBody) },
  'POST /v1/volumes': { body: json(CreateVolumeBody) },
  'GET /v1/volumes': { querystring: Type.Object({ limit: Opt(str('1 to 1000')), offset: Opt(Type.String()), owner_kind: Opt(Type.String()), owner_ref: Opt(Type.String()) }) },
  'PATCH /v1/volumes/:id': { body: json(RenameVolumeBody) },
  'GET /v1/volumes/:id/events': { querystring: Type.Object({ limit: Opt(str('1 to 200')), offset: Opt(Type.String()), execution_id: Opt(Type.String()), operation: Opt(Type.String()) }) },
  'GET /v1/volumes/:id/files': { querystring: PathQuery(false) },
  'GET /v1/volumes/:id/files/stat': { querystring: PathQuery(true) },
  'GET /v1/volumes/:id/files/content': { querystring: PathQuery(true) },
  'PUT /v1/volumes/:id/files/content': {
    body: described({ 'application/octet-stream': RawBytes }),
    querystring: Type.Object({ path: str('Absolute path in the volume'), exclusive: Opt(str('true: fail if the file exists')) }),
  },
  'DELETE /v1/volumes/:id/files': { querystring: Type.Object({ path: str('Absolute path in the volume'), recursive: Opt(str('true: remove a directory and its contents')) }) },
  'POST /v1/volumes/:id/files/mkdir': { body: json(MkdirBody) },
  'POST /v1/volumes/:id/files/move': { body: json(MoveBody) },
  'POST /v1/dispatch-gateway': { body: json(DispatchBody) },
  'POST /v1/mcp': { body: json(McpBody) },
  'POST /v1/seal/attest': { body: described({ 'application/json': AttestBody }) },
  'POST /v1/seal/invoke': { body: described({ 'application/json': SealEnvelope }) },
  'POST /v1/invoke': { body: described({ 'application/json': SealEnvelope }) },
};

/** Routes whose body is described but not validated by fastify (raw bytes; see the header). */
const RAW_BODY_ROUTES = new Set(['POST /v1/webhooks/:source', 'PUT /v1/volumes/:id/files/content', 'POST /v1/seal/attest', 'POST /v1/seal/invoke', 'POST /v1/invoke']);

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
      const given = REQUEST_SCHEMAS[key] ?? {};
      const schema: Record<string, unknown> = { ...(route.schema ?? {}) };
      const params = given.params ?? pathParams(route.url);
      if (params && schema.params === undefined) schema.params = params;
      if (given.querystring && schema.querystring === undefined) schema.querystring = given.querystring;
      if (given.body && schema.body === undefined) {
        if (RAW_BODY_ROUTES.has(key)) schema['x-described-body'] = given.body;
        else schema.body = given.body;
      }
      route.schema = schema;
    }
  });
}
