// GET /openapi.json (issue 19): an OpenAPI 3.1 document generated from the routes. Every route the node registered
// is in it, each /v1 operation says how it authenticates and which errors it answers in the one error body, and the
// seed routes of CONTRACT.md answer only status codes the document lists for them (checked against a real node).
import test from 'ava';
import { randomBytes, randomUUID } from 'node:crypto';
import { AGENT, startHarness, WORKFLOW } from '../observability/harness.ts';

interface Operation {
  security?: Array<Record<string, string[]>>;
  responses?: Record<string, { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> }>;
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
});
