// GET /openapi.json (issue 19): an OpenAPI 3.1 document generated from the routes. Every route the node registered
// is in it, each /v1 operation says how it authenticates and which errors it answers in the one error body, and the
// seed routes of CONTRACT.md answer only status codes the document lists for them (checked against a real node).
import test from 'ava';
import { Ajv } from 'ajv';
import { randomBytes, randomUUID } from 'node:crypto';
import { REQUEST_SCHEMAS } from '../../src/gateway/http/request-schemas.ts';
import { RESPONSE_SCHEMAS } from '../../src/gateway/http/response-schemas.ts';
import { AGENT, startHarness, WORKFLOW, type Harness } from '../observability/harness.ts';

interface Operation {
  security?: Array<Record<string, string[]>>;
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> }>;
  parameters?: Array<{ name: string; in: string }>;
  requestBody?: unknown;
}
interface OpenApi {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, unknown> };
}

const toOpenApiPath = (url: string): string => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace('*', '{*}');

test('the document covers every route, its auth and errors, and the seed routes answer what it documents', async (t) => {
  const h = await startHarness(t);
  const res = await fetch(`${h.http}/openapi.json`);
  t.is(res.status, 200, 'served without a token');
  const doc = (await res.json()) as OpenApi;
  t.is(doc.openapi, '3.1.0');
  t.truthy(doc.components.securitySchemes.bearerAuth);

  // Every registered route (HEAD and OPTIONS are implied by GET / CORS and not operations of their own).
  const routes = h.node.httpRoutes.filter((r) => r.method !== 'HEAD' && r.method !== 'OPTIONS' && r.url !== '/openapi.json');
  t.true(routes.filter((r) => r.url.startsWith('/v1/')).length > 60, `${routes.length} routes`);
  const missing = routes.filter((r) => !doc.paths[toOpenApiPath(r.url)]?.[r.method.toLowerCase()]).map((r) => `${r.method} ${r.url}`);
  t.deepEqual(missing, [], 'every registered route is in the document');

  // Each /v1 operation: how it authenticates and the shared error answers.
  for (const r of routes.filter((x) => x.url.startsWith('/v1/'))) {
    const op = doc.paths[toOpenApiPath(r.url)]![r.method.toLowerCase()]!;
    const open = ['/v1/webhooks/', '/v1/seal/', '/v1/invoke', '/v1/dispatch-gateway'].some((p) => r.url.startsWith(p));
    t.deepEqual(op.security, open ? [] : [{ bearerAuth: [] }], `${r.method} ${r.url} security`);
    for (const code of ['400', '429', '500', '503']) {
      t.truthy(op.responses?.[code]?.content?.['application/json']?.schema?.properties?.error, `${r.method} ${r.url} documents ${code} with the error body`);
    }
    if (!open) t.truthy(op.responses?.['401'], `${r.method} ${r.url} documents 401`);
  }
  const listOp = doc.paths['/v1/executions']!.get!;
  t.deepEqual(listOp.parameters?.map((p) => `${p.in}:${p.name}`).sort(), ['query:agent_id', 'query:id_prefix', 'query:limit', 'query:offset', 'query:status']);
  t.truthy(doc.paths['/v1/workflows/{name}/run']!.post!.requestBody, 'the run body is described');

  // Every route that takes a body describes it (request-schemas.ts); only the two cancels take none.
  const bodiless = new Set(['POST /v1/executions/:id/cancel', 'POST /v1/workflows/executions/:id/cancel']);
  const withBody = routes.filter((r) => r.url.startsWith('/v1/') && ['POST', 'PUT', 'PATCH'].includes(r.method) && !bodiless.has(`${r.method} ${r.url}`));
  t.true(withBody.length >= 25, `${withBody.length} routes with a body`);
  const noBody = withBody.filter((r) => {
    const content = (doc.paths[toOpenApiPath(r.url)]![r.method.toLowerCase()]!.requestBody as { content?: Record<string, { schema?: unknown }> } | undefined)?.content;
    return !content || Object.values(content).length === 0 || Object.values(content).some((c) => c.schema === undefined);
  });
  t.deepEqual(noBody.map((r) => `${r.method} ${r.url}`), [], 'every route with a body has a requestBody schema');
  // Every path parameter is described, on every /v1 route.
  for (const r of routes.filter((x) => x.url.startsWith('/v1/') && x.url.includes(':'))) {
    const names = [...r.url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => `path:${m[1]}`).sort();
    const op = doc.paths[toOpenApiPath(r.url)]![r.method.toLowerCase()]!;
    t.deepEqual(op.parameters?.filter((p) => p.in === 'path').map((p) => `${p.in}:${p.name}`).sort(), names, `${r.method} ${r.url} describes its path parameters`);
  }

  // The seed routes answer only what is documented for them.
  const seen: Array<[string, string, number]> = [];
  const call = async (method: string, pattern: string, url: string, body?: unknown): Promise<number> => {
    const r = await h.api(method, url, body);
    seen.push([method, pattern, r.status]);
    return r.status;
  };
  const agent = `oas-${randomBytes(3).toString('hex')}`;
  t.is(await call('POST', '/v1/agents', '/v1/agents', { manifest_yaml: AGENT(agent) }), 201);
  t.is(await call('POST', '/v1/agents', '/v1/agents', { manifest_yaml: AGENT(agent) }), 409);
  t.is(await call('POST', '/v1/agents', '/v1/agents', { manifest_yaml: 'apiVersion: orch.dev/v1\nkind: Agent\nmetadata: { name: x }\nspec: {}\n' }), 422);
  t.is(await call('GET', '/v1/executions', '/v1/executions'), 200);
  t.is(await call('GET', '/v1/executions', '/v1/executions?limit=abc'), 400);
  t.is(await call('GET', '/v1/executions/:id', `/v1/executions/${randomUUID()}`), 404);
  t.is(await call('DELETE', '/v1/executions/:id', `/v1/executions/${randomUUID()}`), 404);
  const wf = `oas-wf-${randomBytes(3).toString('hex')}`;
  t.is(await call('POST', '/v1/workflows', '/v1/workflows', { manifest_yaml: WORKFLOW(wf) }), 201);
  t.is(await call('POST', '/v1/workflows', '/v1/workflows', { manifest_yaml: 'apiVersion: orch.dev/v1\nkind: Workflow\nmetadata: { name: y }\nspec: {}\n' }), 422);
  t.is(await call('POST', '/v1/workflows/:name/run', `/v1/workflows/${wf}/run`, { input: {} }), 201);
  t.is(await call('POST', '/v1/workflows/:name/run', `/v1/workflows/no-such-${wf}/run`, { input: {} }), 404);
  t.is(await call('GET', '/v1/workflows/executions/:id/logs', `/v1/workflows/executions/${randomUUID()}/logs?offset=-1`), 400);
  // The dashboard's routes (issue 22): undrain (operator only) and usage are documented and answer what they list.
  t.truthy(doc.paths['/v1/cluster/nodes/{node_id}/undrain']?.post, 'undrain is documented');
  t.truthy(doc.paths['/v1/stats/usage']?.get, 'usage is documented');
  t.true([403, 404].includes(await call('POST', '/v1/cluster/nodes/:node_id/undrain', `/v1/cluster/nodes/no-such-node/undrain`, {})));
  t.is(await call('GET', '/v1/stats/usage', '/v1/stats/usage?scope=bad'), 400);
  t.is(await call('GET', '/v1/stats/usage', '/v1/stats/usage'), 200);
  for (const [method, pattern, status] of seen) {
    t.truthy(doc.paths[toOpenApiPath(pattern)]?.[method.toLowerCase()]?.responses?.[String(status)], `${method} ${pattern} answered ${status}, which its document lists`);
  }

  // A query parameter that fails its schema is a 400 naming it, in the usual error body.
  const twice = await h.api<{ error: string }>('GET', '/v1/executions?status=a&status=b');
  t.is(twice.status, 400);
  t.regex(twice.body.error, /status/);

  // A body that fails its schema is a 400 naming the field, in the usual error body, before anything runs.
  const badStart = await h.api<{ error: string }>('POST', '/v1/executions', { agent_id: agent, input: 5 });
  t.is(badStart.status, 400);
  t.regex(badStart.body.error, /input/);
  const badRun = await h.api<{ error: string }>('POST', `/v1/workflows/${wf}/run`, { input: {}, version: 3 });
  t.is(badRun.status, 400);
  t.regex(badRun.body.error, /version/);
  // No coercion: a JSON number is not taken as the string a field wants.
  const badReject = await h.api<{ error: string }>('POST', `/v1/human-approvals/${randomUUID()}/reject`, { reason: 12 });
  t.is(badReject.status, 400);
  t.regex(badReject.body.error, /reason/);
  // Seed 000's error body where it fixes one: agent_id that is not a UUID (a number, or none) is `Invalid agent ID`.
  for (const body of [{ agent_id: 5, input: 'x' }, { input: 'x' }, { agent_id: 'nope', input: 'x' }]) {
    t.deepEqual(await h.api('POST', '/v1/executions', body), { status: 400, body: { error: 'Invalid agent ID' } }, JSON.stringify(body));
  }
  // A JSON route's body is checked whatever its Content-Type says: a text/plain body is not taken as a string.
  const plain = await fetch(`${h.http}/v1/executions`, { method: 'POST', headers: { authorization: `Bearer ${h.token}`, 'content-type': 'text/plain' }, body: 'hello' });
  t.is(plain.status, 400);
  t.regex(((await plain.json()) as { error: string }).error, /body must be object|Invalid agent ID/);

  // Every /v1 route documents its success answer (response-schemas.ts), and both tables name only real routes.
  const keys = new Set(routes.map((r) => `${r.method} ${r.url}`));
  t.deepEqual(Object.keys(REQUEST_SCHEMAS).filter((k) => !keys.has(k)), [], 'every request schema is for a registered route');
  t.deepEqual(Object.keys(RESPONSE_SCHEMAS).filter((k) => !keys.has(k)), [], 'every response schema is for a registered route');
  const undescribed = routes.filter((r) => r.url.startsWith('/v1/') && !(RESPONSE_SCHEMAS as Record<string, unknown>)[`${r.method} ${r.url}`]).map((r) => `${r.method} ${r.url}`);
  t.deepEqual(undescribed, [], 'every /v1 route has its answers in response-schemas.ts');
  for (const r of routes.filter((x) => x.url.startsWith('/v1/'))) {
    const responses = doc.paths[toOpenApiPath(r.url)]![r.method.toLowerCase()]!.responses ?? {};
    t.false(Object.values(responses).some((x) => /not described/.test(x.description ?? '')), `${r.method} ${r.url} describes its answer`);
  }

  // The real answers of the node match their documented schemas, on every route driven here.
  const checked = await driveAndCheck(h, doc);
  t.deepEqual(checked.failures, [], 'every answer matches its documented schema');
  t.true(checked.routes.size >= 45, `${checked.routes.size} routes checked: ${[...checked.routes].join(', ')}`);
});

/**
 * Drives the node through most /v1 routes and validates each JSON answer against the schema the document gives
 * for its route and status (ajv over the document itself, so what is checked is what clients read).
 */
async function driveAndCheck(h: Harness, doc: OpenApi): Promise<{ failures: string[]; routes: Set<string> }> {
  const ajv = new Ajv({ strict: false, allErrors: true });
  const failures: string[] = [];
  const routes = new Set<string>();
  const call = async <T = Record<string, any>>(method: string, pattern: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> => {
    const r = await h.api<T>(method, url, body, headers);
    check(method, pattern, r.status, r.body);
    return r.body;
  };
  const check = (method: string, pattern: string, status: number, body: unknown): void => {
    const answer = doc.paths[toOpenApiPath(pattern)]?.[method.toLowerCase()]?.responses?.[String(status)];
    if (!answer) return void failures.push(`${method} ${pattern}: ${status} is not documented (${JSON.stringify(body).slice(0, 200)})`);
    if (status >= 300) return;
    const schema = answer.content?.['application/json']?.schema;
    if (!schema) return void failures.push(`${method} ${pattern}: ${status} has no JSON schema`);
    const validate = ajv.compile(schema);
    if (!validate(body)) failures.push(`${method} ${pattern} ${status}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(body).slice(0, 300)}`);
    routes.add(`${method} ${pattern}`);
  };

  await call('GET', '/v1/whoami', '/v1/whoami');
  const name = `oas-r-${randomBytes(3).toString('hex')}`;
  const exec = await h.runExecution(name);
  const agents = await call<{ agents: Array<{ agent_id: string }> }>('GET', '/v1/agents', '/v1/agents');
  const agentId = agents.agents[0]!.agent_id;
  await call('GET', '/v1/agents/:id', `/v1/agents/${agentId}`);
  await call('GET', '/v1/agents/:id/versions', `/v1/agents/${name}/versions`);
  await call('GET', '/v1/agents/lookup/:name', `/v1/agents/lookup/${name}`);
  await call('PUT', '/v1/agents/:id', `/v1/agents/${name}`, { manifest_yaml: AGENT(name).replace('1.0.0', '1.0.1') });
  await call('GET', '/v1/executions', '/v1/executions?limit=2');
  await call('GET', '/v1/executions/:id', `/v1/executions/${exec}`);
  await call('GET', '/v1/executions/:id/logs', `/v1/executions/${exec}/logs?limit=3`);
  await call('GET', '/v1/executions/:id/timeline', `/v1/executions/${exec}/timeline`);
  await call('POST', '/v1/executions/:id/cancel', `/v1/executions/${exec}/cancel`);
  const started = await call<{ execution_id: string }>('POST', '/v1/agents/:id/execute', `/v1/agents/${agentId}/execute`, { input: 'go' });
  await call('POST', '/v1/executions', '/v1/executions', { agent_id: agentId, input: 'go' }, { prefer: 'wait=1' });
  await call('POST', '/v1/executions/:id/cancel', `/v1/executions/${started.execution_id}/cancel`);
  await call('DELETE', '/v1/executions/:id', `/v1/executions/${exec}`);
  const stream = await fetch(`${h.http}/v1/executions/${started.execution_id}/stream?follow=false`, { headers: { authorization: `Bearer ${h.token}` } });
  if (stream.status !== 200 || !stream.headers.get('content-type')?.startsWith('text/event-stream')) failures.push(`GET /v1/executions/:id/stream: ${stream.status}`);
  await stream.text();

  const wf = `oas-r-wf-${randomBytes(3).toString('hex')}`;
  const run = await h.runWorkflow(wf);
  await call('GET', '/v1/workflows', '/v1/workflows');
  await call('GET', '/v1/workflows/:name', `/v1/workflows/${wf}`);
  await call('GET', '/v1/workflows/:name/versions', `/v1/workflows/${wf}/versions`);
  await call('GET', '/v1/workflows/executions', '/v1/workflows/executions?limit=2');
  await call('GET', '/v1/workflows/executions/:id', `/v1/workflows/executions/${run}`);
  await call('GET', '/v1/workflows/executions/:id/logs', `/v1/workflows/executions/${run}/logs?limit=2`);
  await call('POST', '/v1/workflows/executions/:id/cancel', `/v1/workflows/executions/${run}/cancel`);
  await call('POST', '/v1/workflows/:name/run', `/v1/workflows/${wf}/run`, { input: {} }, { prefer: 'wait=20' });
  await call('DELETE', '/v1/workflows/executions/:id', `/v1/workflows/executions/${run}`);
  const mine = `oas-r-user-${randomBytes(3).toString('hex')}`;
  await call('POST', '/v1/workflows', '/v1/workflows', { manifest_yaml: WORKFLOW(mine), scope: 'user' });
  await call('POST', '/v1/workflows/:name/promote', `/v1/workflows/${mine}/promote`, { target_scope: 'tenant' });
  await call('POST', '/v1/workflows/:name/demote', `/v1/workflows/${mine}/demote`, { target_scope: 'user' });
  await call('DELETE', '/v1/workflows/:name', `/v1/workflows/${mine}`);

  await call('GET', '/v1/human-approvals', '/v1/human-approvals');
  await call('GET', '/v1/human-approvals/:id', `/v1/human-approvals/${randomUUID()}`);
  await call('GET', '/v1/cluster/nodes', '/v1/cluster/nodes');
  await call('GET', '/v1/stats/history', '/v1/stats/history?minutes=2');
  await call('GET', '/v1/stats/usage', '/v1/stats/usage');
  await call('GET', '/v1/stimuli', '/v1/stimuli');

  const vol = await call<{ id: string }>('POST', '/v1/volumes', '/v1/volumes', { label: 'oas', size_limit_bytes: 1_000_000 });
  await call('GET', '/v1/volumes', '/v1/volumes');
  await call('GET', '/v1/volumes/:id', `/v1/volumes/${vol.id}`);
  await call('PATCH', '/v1/volumes/:id', `/v1/volumes/${vol.id}`, { label: 'oas2' });
  await call('GET', '/v1/volumes/:id/quota', `/v1/volumes/${vol.id}/quota`);
  await call('POST', '/v1/volumes/:id/files/mkdir', `/v1/volumes/${vol.id}/files/mkdir`, { path: '/d' });
  const put = await fetch(`${h.http}/v1/volumes/${vol.id}/files/content?path=/d/a.txt`, { method: 'PUT', headers: { authorization: `Bearer ${h.token}` }, body: 'hello' });
  check('PUT', '/v1/volumes/:id/files/content', put.status, await put.json());
  await call('GET', '/v1/volumes/:id/files', `/v1/volumes/${vol.id}/files?path=/d`);
  await call('GET', '/v1/volumes/:id/files/stat', `/v1/volumes/${vol.id}/files/stat?path=/d/a.txt`);
  await call('POST', '/v1/volumes/:id/files/move', `/v1/volumes/${vol.id}/files/move`, { from: '/d/a.txt', to: '/d/b.txt' });
  await call('DELETE', '/v1/volumes/:id/files', `/v1/volumes/${vol.id}/files?path=/d&recursive=true`);
  await call('GET', '/v1/volumes/:id/events', `/v1/volumes/${vol.id}/events?limit=2`);
  await call('DELETE', '/v1/volumes/:id', `/v1/volumes/${vol.id}`);
  await call('POST', '/v1/mcp', '/v1/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { accept: 'application/json, text/event-stream' });
  await call('GET', '/v1/mcp', '/v1/mcp');
  await call('DELETE', '/v1/agents/:id', `/v1/agents/${name}`);
  return { failures, routes };
}
