// /v1/agents over real HTTP with real tokens: auth, deploy (JSON and raw YAML bodies), 409, 422 with field errors,
// lookup 404 body, CRUD by UUID or name, versions, tenant isolation.
import test from 'ava';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { registerAgentRoutes } from '../../src/gateway/http/agent-routes.ts';
import { AgentService } from '../../src/agents/service.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { openDb } from '../../src/storage/open.ts';
import type { Db } from '../../src/storage/db.ts';
import { httpCall, startAuthedApp, type CallOptions, type Res } from '../support/http-app.ts';
import { makeTestIdp } from '../support/jwks.ts';

let app: FastifyInstance;
let db: Db;
let dir: string;
let base: string;
let idp: Awaited<ReturnType<typeof makeTestIdp>>;
let aliceToken: string;
let carolToken: string;

const manifest = (name: string, version: string): string => `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: ${name}, version: ${version} }
spec:
  runtime: { language: node, version: "20" }
  task: { instruction: Print a greeting. }
  tools: [ fs.write ]
`;

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'orch-agent-routes-'));
  idp = await makeTestIdp();
  db = await openDb({ dataDir: dir }, silentLogger());
  ({ app, base } = await startAuthedApp(idp, (a) => registerAgentRoutes(a, new AgentService(db, silentLogger()))));
  aliceToken = await idp.sign({ sub: 'alice', tenant_id: 'acme' });
  carolToken = await idp.sign({ sub: 'carol', tenant_id: 'globex' });
});

test.after.always(async () => {
  await app?.close();
  await db?.close();
  await rm(dir, { recursive: true, force: true });
});

function call(method: string, p: string, opts: CallOptions = {}): Promise<Res> {
  return httpCall(base, method, p, opts);
}

test('without a token every agent route is 401', async (t) => {
  for (const [method, p] of [['GET', '/v1/agents'], ['POST', '/v1/agents'], ['GET', '/v1/agents/lookup/x'], ['GET', '/v1/agents/x'], ['DELETE', '/v1/agents/x'], ['GET', '/v1/agents/x/versions']] as const) {
    const res = await call(method, p, method === 'POST' ? { json: { manifest_yaml: manifest('x', '1.0.0') } } : {});
    t.is(res.status, 401, `${method} ${p}`);
    t.is(typeof res.body.error, 'string');
  }
});

test.serial('deploy with a JSON body: 201, then 409 for the same version, then force', async (t) => {
  const created = await call('POST', '/v1/agents', { token: aliceToken, json: { manifest_yaml: manifest('greeter', '1.0.0') } });
  t.is(created.status, 201, created.text);
  t.deepEqual(Object.keys(created.body).sort(), ['agent_id', 'name', 'version']);
  t.like(created.body, { name: 'greeter', version: '1.0.0' });
  const dup = await call('POST', '/v1/agents', { token: aliceToken, json: { manifest_yaml: manifest('greeter', '1.0.0') } });
  t.is(dup.status, 409);
  t.regex(String(dup.body.error), /already exists/);
  const forced = await call('POST', '/v1/agents', { token: aliceToken, json: { manifest_yaml: manifest('greeter', '1.0.0'), force: true } });
  t.is(forced.status, 201);
  t.is(forced.body.agent_id, created.body.agent_id);

  const lookup = await call('GET', '/v1/agents/lookup/greeter', { token: aliceToken });
  t.is(lookup.status, 200);
  t.like(lookup.body, { agent_id: created.body.agent_id, name: 'greeter', tenant_id: 'acme' });
  const list = await call('GET', '/v1/agents', { token: aliceToken });
  t.like((list.body.agents as Record<string, unknown>[])[0], { agent_id: created.body.agent_id, name: 'greeter', tenant_id: 'acme', version: '1.0.0' });
});

test.serial('deploy with a raw YAML body (application/yaml and text/yaml), force in the query', async (t) => {
  const res = await call('POST', '/v1/agents', { token: aliceToken, yaml: manifest('yamlish', '1.0.0') });
  t.is(res.status, 201, res.text);
  t.is((await call('POST', '/v1/agents', { token: aliceToken, yaml: manifest('yamlish', '1.0.0'), contentType: 'text/yaml' })).status, 409);
  const forced = await call('POST', '/v1/agents?force=true', { token: aliceToken, yaml: manifest('yamlish', '1.0.0'), contentType: 'text/yaml; charset=utf-8' });
  t.is(forced.status, 201, forced.text);
  const example = await readFile(new URL('../../examples/agents/hello.yaml', import.meta.url), 'utf8');
  const hello = await call('POST', '/v1/agents', { token: aliceToken, yaml: example });
  t.is(hello.status, 201, hello.text);
  t.like(hello.body, { name: 'hello', version: '1.0.0' });
});

test('an invalid manifest is 422 with the errors, each naming its field', async (t) => {
  const bad = manifest('broken', '1.0.0').replace('fs.write', 'fs.levitate').replace('version: "20"', 'version: "20", colour: red');
  const res = await call('POST', '/v1/agents', { token: aliceToken, json: { manifest_yaml: bad } });
  t.is(res.status, 422);
  t.is(res.body.error, 'invalid agent manifest');
  const errors = res.body.errors as { field: string; message: string }[];
  t.deepEqual(errors.map((e) => e.field), ['spec.runtime.colour']);
  const semantic = await call('POST', '/v1/agents', { token: aliceToken, yaml: manifest('broken', '1.0.0').replace('fs.write', 'fs.levitate') });
  t.is(semantic.status, 422);
  t.deepEqual((semantic.body.errors as { field: string }[]).map((e) => e.field), ['spec.tools[0]']);
  const syntax = await call('POST', '/v1/agents', { token: aliceToken, yaml: 'kind: [Agent\nmetadata: {' });
  t.is(syntax.status, 422);
  t.regex((syntax.body.errors as { message: string }[])[0]!.message, /line \d/);
  t.is((await call('POST', '/v1/agents', { token: aliceToken, json: { force: true } })).status, 400);
});

test('lookup of an unknown name is 404 with exactly {"error":"Agent not found"}', async (t) => {
  const res = await call('GET', '/v1/agents/lookup/no-such-agent', { token: aliceToken });
  t.is(res.status, 404);
  t.is(res.text, '{"error":"Agent not found"}');
});

test.serial('CRUD by UUID or name, versions, and another tenant sees nothing', async (t) => {
  const created = await call('POST', '/v1/agents', { token: aliceToken, json: { manifest_yaml: manifest('crud', '1.0.0') } });
  t.is(created.status, 201);
  const id = String(created.body.agent_id);
  const byId = await call('GET', `/v1/agents/${id}`, { token: aliceToken });
  t.is(byId.status, 200);
  t.like(byId.body, { agent_id: id, name: 'crud', version: '1.0.0' });
  t.like(byId.body.manifest, { kind: 'Agent' });
  t.is((await call('GET', '/v1/agents/crud', { token: aliceToken })).body.agent_id, id);

  const put = await call('PUT', `/v1/agents/${id}`, { token: aliceToken, yaml: manifest('crud', '2.0.0') });
  t.is(put.status, 200, put.text);
  t.like(put.body, { agent_id: id, version: '2.0.0' });
  t.is((await call('PUT', '/v1/agents/crud', { token: aliceToken, json: { manifest_yaml: manifest('crud', '2.0.0') } })).status, 409);
  const badPut = await call('PUT', '/v1/agents/crud', { token: aliceToken, json: { manifest_yaml: manifest('other', '3.0.0') } });
  t.is(badPut.status, 422);
  t.deepEqual((badPut.body.errors as { field: string }[]).map((e) => e.field), ['metadata.name']);

  const versions = await call('GET', '/v1/agents/crud/versions', { token: aliceToken });
  t.is(versions.status, 200);
  t.deepEqual((versions.body.versions as { version: string }[]).map((v) => v.version), ['2.0.0', '1.0.0']);

  // Tenant isolation.
  t.is((await call('GET', '/v1/agents/lookup/crud', { token: carolToken })).text, '{"error":"Agent not found"}');
  t.is((await call('GET', `/v1/agents/${id}`, { token: carolToken })).status, 404);
  t.is((await call('DELETE', `/v1/agents/${id}`, { token: carolToken })).status, 404);
  t.false(((await call('GET', '/v1/agents', { token: carolToken })).body.agents as { name: string }[]).some((a) => a.name === 'crud'));

  const del = await call('DELETE', `/v1/agents/${id}`, { token: aliceToken });
  t.is(del.status, 200);
  t.like(del.body, { agent_id: id, deleted: true });
  t.is((await call('GET', '/v1/agents/lookup/crud', { token: aliceToken })).status, 404);
});

test('a global deploy needs the operator role', async (t) => {
  const res = await call('POST', '/v1/agents', { token: aliceToken, json: { manifest_yaml: manifest('everywhere', '1.0.0'), scope: 'global' } });
  t.is(res.status, 403);
  const opToken = await idp.sign({ sub: 'root', tenant_id: 'orch-system', realm_access: { roles: ['operator'] } });
  const ok = await call('POST', '/v1/agents?scope=global', { token: opToken, yaml: manifest('everywhere', '1.0.0') });
  t.is(ok.status, 201, ok.text);
  t.like((await call('GET', '/v1/agents/lookup/everywhere', { token: carolToken })).body, { agent_id: ok.body.agent_id, tenant_id: 'orch-system' });
  t.is((await call('POST', '/v1/agents', { token: aliceToken, json: { manifest_yaml: manifest('x', '1.0.0'), scope: 'planet' } })).status, 400);
});
