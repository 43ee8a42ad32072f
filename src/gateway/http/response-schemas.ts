// The 2xx answers of every /v1 route (issue 19), written once in TypeBox and keyed `METHOD /url` like the request
// table (request-schemas.ts). openapi.ts puts them in GET /openapi.json; they are the document only, never
// fastify's response serialisers (those would drop a field a schema leaves out instead of failing loudly).
// test/gateway/openapi.test.ts checks the real answers of a real node against them for every route it drives.
//
// Objects stay open (a field added later is not a breaking change); what is listed is required with its JSON type.
// Timestamps are ISO 8601 strings. Rows the services build (an execution, a workflow run, a volume) are described by
// the fields clients read; their whole shape is in docs/ for each capability.
import { Type, type Static, type TSchema } from '@sinclair/typebox';

const Opt = Type.Optional;
const S = Type.String;
const Int = Type.Integer;
const Num = Type.Number;
const Bool = Type.Boolean;
const Any = Type.Unknown;
const nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const time = (description = 'ISO 8601') => S({ description });
const list = <T extends TSchema>(items: T) => Type.Array(items);
const obj = Type.Object;
/** A JSON object whose shape its own docs describe (a manifest, a step, an event); typed `object` so any row fits. */
const FreeMap = Type.Unsafe<object>({ type: 'object' });

// Agents ----------------------------------------------------------------------------------------------------------

const AgentSummary = obj({
  agent_id: S(),
  name: S(),
  tenant_id: S(),
  version: S(),
  scope: S({ description: 'user, tenant or global' }),
  owner_subject: nullable(S()),
  description: nullable(S()),
  labels: FreeMap,
  status: S(),
  created_at: time(),
  updated_at: time(),
});
const AgentDetail = Type.Composite([AgentSummary, obj({ manifest: FreeMap, manifest_yaml: S() })]);
const Deployed = obj({ agent_id: S(), name: S(), version: S() });
const AgentVersions = obj({
  agent_id: S(),
  name: S(),
  versions: list(obj({ version: S(), current: Bool(), deployed_by: nullable(S()), created_at: time(), updated_at: time() })),
});

// Executions ------------------------------------------------------------------------------------------------------

const Usage = obj({ prompt_tokens: Int(), completion_tokens: Int() });
const Execution = obj({
  execution_id: S(),
  agent_id: S(),
  agent_name: nullable(S()),
  tenant_id: S(),
  status: S({ description: 'pending, running, completed, failed or cancelled' }),
  input: S(),
  iteration: Int(),
  final_output: nullable(S()),
  reason: nullable(S()),
  workflow_execution_id: nullable(S()),
  created_at: time(),
  started_at: nullable(time()),
  completed_at: nullable(time()),
});
const Started = obj({ execution_id: S() });
const ExecutionEnded = obj(
  { execution_id: S(), status: S({ description: 'completed, failed or cancelled; or running when the wait ended first' }) },
  { description: 'With Prefer: wait=N (run-and-wait): the execution as it ended, or `{execution_id}` if still running' },
);
const Cancelled = obj({ cancelled: Bool(), status: S(), error: Opt(S()) });
const Page = { count: Int(), limit: Int(), offset: Int() };
const ExecutionLogs = obj({
  execution_id: S(),
  events: list(obj({ sequence: Int(), event_type: S(), payload: Any(), recorded_at: time() })),
  ...Page,
});
const Timeline = obj({ execution_id: S(), iterations: list(obj({ number: Int(), status: S(), steps: list(FreeMap) })), usage: Usage });
const Sse = S({ description: 'Server-Sent Events (text/event-stream): `id:` the seq, `event:` the type, `data:` the event as JSON' });

// Workflows -------------------------------------------------------------------------------------------------------

const WorkflowSummary = obj({
  workflow_id: S(),
  name: S(),
  version: S(),
  scope: S(),
  tenant_id: S(),
  description: nullable(S()),
  labels: FreeMap,
  created_at: time(),
  updated_at: time(),
});
const WorkflowDetail = obj({ workflow_id: S(), name: S(), version: S(), scope: S(), tenant_id: S(), manifest: FreeMap, manifest_yaml: S(), created_at: time() });
const WorkflowDeployed = obj({ workflow_id: S(), name: S(), version: S(), scope: S(), replaced: Bool() });
const WorkflowVersions = obj({
  name: S(),
  scope: S(),
  versions: list(obj({ workflow_id: S(), version: S(), latest: Bool(), created_at: time() })),
});
const WorkflowRemoved = obj({ workflow_id: S(), name: S(), scope: S(), deleted: Bool(), versions: list(S()) });
const ScopeChanged = obj({ workflow_id: S(), name: S(), from_scope: S(), target_scope: S(), versions: list(S()) });
const WorkflowRun = obj({
  execution_id: S(),
  workflow_id: S(),
  workflow_name: S(),
  workflow_version: S(),
  tenant_id: S(),
  status: S({ description: 'running, waiting_for_human_input, completed, failed or cancelled' }),
  current_state: nullable(S()),
  input: Any(),
  blackboard: FreeMap,
  final_output: Any(),
  error: nullable(S()),
  created_at: time(),
});
const RunStarted = obj({ execution_id: S(), status: Type.Literal('started') });
const RunEnded = obj({ execution_id: S(), status: S({ description: 'completed, failed or cancelled' }), final_output: Any(), error: Opt(nullable(S())) });
const RunLogs = obj({
  execution_id: S(),
  events: list(obj({ sequence: Int(), event_type: S(), state_name: nullable(S()), iteration_number: nullable(Int()), payload: Any(), recorded_at: time() })),
  ...Page,
  total: Int(),
});

// Approvals, cluster, stats, stimuli ------------------------------------------------------------------------------

const Approval = obj({
  id: S(),
  execution_id: S(),
  state_name: S(),
  prompt: S(),
  created_at: time(),
  timeout_seconds: nullable(Int()),
  deadline: nullable(time()),
  default_response: nullable(S()),
});
const ApprovalAnswer = Type.Union([obj({ request: Approval }), obj({ error: S({ description: 'Request not found or already completed (seed 000: a 200)' }) })]);
const Resolved = (status: 'approved' | 'rejected') => obj({ status: Type.Literal(status), id: S(), execution_id: S() });
const ClusterNode = obj({ node_id: S(), role: S(), status: S(), grpc_address: nullable(S()), load: nullable(FreeMap), last_heartbeat_at: nullable(time()), drained: Bool() });
const Bucket = obj({ t: Int({ description: 'Unix seconds of the minute' }), started: Int(), completed: Int(), failed: Int(), tokens: Int(), cost: nullable(Num()) });
const History = obj({ minutes: Int(), currency: S(), priced: Bool(), nodes: list(FreeMap), buckets: list(Bucket) });
const UsageRow = { executions: Int(), prompt_tokens: Int(), completion_tokens: Int(), cost: nullable(Num()) };
const UsageReport = obj({
  minutes: Int(),
  scope: S({ description: 'tenant or cluster' }),
  currency: S(),
  priced: Bool(),
  tenants: list(obj({ tenant_id: S(), ...UsageRow })),
  agents: list(obj({ tenant_id: S(), agent_name: S(), model: nullable(S()), ...UsageRow })),
  truncated: Bool(),
});
const StimulusAccepted = obj({ stimulus_id: S(), workflow_execution_id: S() });
const Stimulus = obj({
  stimulus_id: S(),
  tenant_id: S(),
  source: S(),
  idempotency_key: nullable(S()),
  content: S(),
  headers: Type.Record(S(), S()),
  status: S(),
  workflow_execution_id: nullable(S()),
  error: nullable(S()),
  created_at: time(),
});

// Volumes ---------------------------------------------------------------------------------------------------------

const Volume = obj({
  id: S(),
  tenant_id: S(),
  label: nullable(S()),
  storage_class: S({ description: 'ephemeral or persistent' }),
  size_limit_bytes: Int(),
  used_bytes: Int(),
  status: S(),
  ttl_hours: nullable(Num()),
  expires_at: nullable(time()),
  created_at: time(),
  updated_at: time(),
});
const FileInfo = obj({ name: S(), path: S(), type: S({ description: 'file, directory or symlink' }), size: Int(), mode: Int(), mtime: time() });
const Quota = obj({ volume_id: S(), size_limit_bytes: Int(), used_bytes: Int(), available_bytes: Int(), file_count: Int(), directory_count: Int() });
const Written = obj({ path: S(), bytes_written: Int(), size: Int(), used_bytes: Int() });
const StorageEvents = obj({ volume_id: S(), events: list(FreeMap), ...Page });

// Billing, SEAL, MCP, identity ------------------------------------------------------------------------------------

const Url = obj({ url: S() });
const JsonRpc = obj({ jsonrpc: Type.Literal('2.0'), id: Any(), result: Opt(Any()), error: Opt(obj({ code: Int(), message: S() })) });

const json = <T extends TSchema>(description: string, schema: T) => ({ ...schema, description });

/** The 2xx answers by `METHOD /url` (status → schema). Every /v1 route has one (the OpenAPI test checks it). */
export const RESPONSE_SCHEMAS = {
  'GET /v1/whoami': {
    200: json('The caller as the node resolved it', obj({ subject: S(), username: nullable(S()), roles: list(S()), tenant_id: S(), home_tenant_id: S(), service_account: Bool(), delegated: Bool() })),
  },
  'GET /v1/agents': { 200: json('The agents the caller may see', obj({ agents: list(AgentSummary) })) },
  'POST /v1/agents': { 201: json('Deployed', Deployed) },
  'GET /v1/agents/lookup/:name': { 200: json('The agent of that name', AgentSummary) },
  'GET /v1/agents/:id': { 200: json('The agent with its manifest', AgentDetail) },
  'PUT /v1/agents/:id': { 200: json('Deployed as a new version (or replaced with force)', Type.Composite([Deployed, obj({ replaced: Bool() })])) },
  'DELETE /v1/agents/:id': { 200: json('Removed (one version, or all)', obj({ agent_id: S(), deleted: Bool() })) },
  'GET /v1/agents/:id/versions': { 200: json('Its versions, newest first', AgentVersions) },
  'POST /v1/agents/:id/execute': { 200: json('Started', Started) },
  'POST /v1/executions': { 200: json('Started; with Prefer: wait=N, the execution as it ended within N seconds', Type.Union([ExecutionEnded, Started])) },
  'GET /v1/executions': { 200: json('A page of executions, newest first', obj({ executions: list(Execution) })) },
  'GET /v1/executions/:id': { 200: json('The execution', Execution) },
  'DELETE /v1/executions/:id': { 200: json('Removed', obj({ removed: Bool() })) },
  'POST /v1/executions/:id/cancel': { 200: json('Cancelled, or why not (already ended)', Cancelled) },
  'GET /v1/executions/:id/logs': { 200: json('A page of its events', ExecutionLogs) },
  'GET /v1/executions/:id/timeline': { 200: json('Its iterations, model turns and tool calls', Timeline) },
  'GET /v1/executions/:id/stream': { 200: { description: 'Its events as Server-Sent Events', content: { 'text/event-stream': { schema: Sse } } } },
  'GET /v1/workflows': { 200: json('The workflows the caller may see', obj({ workflows: list(WorkflowSummary) })) },
  'POST /v1/workflows': { 201: json('Deployed', WorkflowDeployed) },
  'GET /v1/workflows/:name': { 200: json('The workflow with its manifest', WorkflowDetail) },
  'DELETE /v1/workflows/:name': { 200: json('Removed (one version, or all)', WorkflowRemoved) },
  'GET /v1/workflows/:name/versions': { 200: json('Its versions', WorkflowVersions) },
  'POST /v1/workflows/:name/promote': { 200: json('Promoted', Type.Composite([ScopeChanged, obj({ promoted: Type.Literal(true) })])) },
  'POST /v1/workflows/:name/demote': { 200: json('Demoted', Type.Composite([ScopeChanged, obj({ demoted: Type.Literal(true) })])) },
  'POST /v1/workflows/:name/run': {
    200: json('Ended within the Prefer: wait=N asked (run-and-wait, RFC 7240; N capped at 60)', RunEnded),
    201: json('Started (without Prefer: wait, or still running when the wait ended)', RunStarted),
  },
  'GET /v1/workflows/executions': { 200: json('A page of runs, newest first', obj({ executions: list(WorkflowRun), count: Int() })) },
  'GET /v1/workflows/executions/:id': { 200: json('The run, with its blackboard and final output', WorkflowRun) },
  'DELETE /v1/workflows/executions/:id': { 200: json('Removed', obj({ removed: Bool(), execution_id: S() })) },
  'POST /v1/workflows/executions/:id/cancel': { 200: json('Cancelled, or why not (already ended)', Type.Composite([Cancelled, obj({ execution_id: S() })])) },
  'POST /v1/workflows/executions/:id/signal': { 200: json('Delivered to the waiting Human state', obj({ signalled: Type.Literal(true), execution_id: S() })) },
  'GET /v1/workflows/executions/:id/logs': { 200: json('A page of its events', RunLogs) },
  'GET /v1/workflows/executions/:id/stream': { 200: { description: 'Its events as Server-Sent Events', content: { 'text/event-stream': { schema: Sse } } } },
  'GET /v1/human-approvals': { 200: json('Pending requests', obj({ pending_requests: list(Approval) })) },
  'GET /v1/human-approvals/:id': { 200: json('The request; or, expired or resolved, `{error}` with 200 (seed 000)', ApprovalAnswer) },
  'POST /v1/human-approvals/:id/approve': { 200: json('Approved; the run resumes', Resolved('approved')) },
  'POST /v1/human-approvals/:id/reject': { 200: json('Rejected; the run takes its rejection path', Resolved('rejected')) },
  'GET /v1/cluster/nodes': { 200: json('The cluster\'s nodes', obj({ nodes: list(ClusterNode) })) },
  'POST /v1/cluster/nodes/:node_id/drain': { 200: json('Draining', obj({ node_id: S(), status: S(), already_draining: Bool() })) },
  'POST /v1/cluster/nodes/:node_id/undrain': { 200: json('Active again', obj({ node_id: S(), status: S(), already_active: Bool() })) },
  'GET /v1/stats/history': { 200: json('Per-minute buckets of the caller\'s tenant and the nodes\' samples', History) },
  'GET /v1/stats/usage': { 200: json('Tokens and cost per tenant and per agent', UsageReport) },
  'POST /v1/stimuli': { 200: json('Routed and started', StimulusAccepted) },
  'GET /v1/stimuli': { 200: json('A page of stimuli', obj({ stimuli: list(Stimulus), count: Int() })) },
  'GET /v1/stimuli/:id': { 200: json('The stimulus', Stimulus) },
  'POST /v1/webhooks/:source': { 200: json('Routed and started', StimulusAccepted) },
  'GET /v1/billing/prices': { 200: json('The pricing tiers', obj({ tiers: list(FreeMap) })) },
  'POST /v1/billing/checkout': { 200: json('The hosted checkout address', Url) },
  'POST /v1/billing/portal': { 200: json('The customer portal address', Url) },
  'GET /v1/billing/subscription': { 200: json('The tenant\'s subscription (free without one)', FreeMap) },
  'GET /v1/billing/invoices': { 200: json('The tenant\'s invoices', obj({ invoices: list(FreeMap) })) },
  'POST /v1/volumes': { 201: json('Created', Volume) },
  'GET /v1/volumes': { 200: json('A page of volumes', obj({ volumes: list(Volume) })) },
  'GET /v1/volumes/:id': { 200: json('The volume', Volume) },
  'PATCH /v1/volumes/:id': { 200: json('Renamed', Volume) },
  'DELETE /v1/volumes/:id': { 200: json('Deleted with its files', obj({ deleted: Bool(), id: S() })) },
  'GET /v1/volumes/:id/quota': { 200: json('Its quota and use', Quota) },
  'GET /v1/volumes/:id/events': { 200: json('A page of its StorageEvents, oldest first', StorageEvents) },
  'GET /v1/volumes/:id/files': { 200: json('A directory\'s entries', obj({ path: S(), entries: list(FileInfo) })) },
  'GET /v1/volumes/:id/files/stat': { 200: json('A file\'s or directory\'s attributes', FileInfo) },
  'GET /v1/volumes/:id/files/content': { 200: { description: 'The file\'s bytes', content: { 'application/octet-stream': { schema: S({ format: 'binary' }) } } } },
  'PUT /v1/volumes/:id/files/content': { 201: json('Written', Written) },
  'DELETE /v1/volumes/:id/files': { 200: json('Removed', obj({ path: S(), freed_bytes: Int() })) },
  'POST /v1/volumes/:id/files/mkdir': { 201: json('Created', FileInfo) },
  'POST /v1/volumes/:id/files/move': { 200: json('Moved: the destination\'s attributes', FileInfo) },
  'POST /v1/dispatch-gateway': { 200: json('The next message for the bootstrap (`final` or `dispatch`, docs/AGENTS.md)', obj({ type: S() })) },
  'POST /v1/mcp': { 200: json('The JSON-RPC 2.0 answer', JsonRpc) },
  // Stateless MCP: no stream to GET, no session to DELETE; both answer 405 with a JSON-RPC error and `Allow: POST`.
  'GET /v1/mcp': { 405: json('Not served: POST only', JsonRpc) },
  'DELETE /v1/mcp': { 405: json('Not served: no sessions', JsonRpc) },
  'POST /v1/seal/attest': { 200: json('Attested', obj({ security_token: S(), session_id: S(), expires_at: S() })) },
  'POST /v1/seal/invoke': { 200: json('The tool call\'s JSON-RPC answer (errors mapped to their status, docs/SEAL.md)', JsonRpc) },
  'POST /v1/invoke': { 200: json('The tool call\'s JSON-RPC answer (alias of /v1/seal/invoke)', JsonRpc) },
  'GET /v1/ws': { 101: { description: 'The live feed (WebSocket upgrade; docs/DASHBOARD.md describes the subscribe protocol)' } },
} as const satisfies Record<string, Record<number, Record<string, unknown>>>;

type Answers = typeof RESPONSE_SCHEMAS;
type SuccessOf<A> = { [C in keyof A]: C extends 200 | 201 ? (A[C] extends TSchema ? Static<A[C]> : never) : never }[keyof A];
/**
 * The JSON a route's handler answers with on success: the `Static<>` type of its documented 2xx schemas, so a
 * handler that builds an answer the document does not describe does not compile.
 */
export type ReplyOf<K extends string> = K extends keyof Answers ? SuccessOf<Answers[K]> : unknown;
