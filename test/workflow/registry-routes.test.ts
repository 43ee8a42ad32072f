// /v1/workflows over real HTTP with real tokens on real PostgreSQL: auth, deploy (JSON and raw YAML bodies), 409 and
// force, 422 with field errors for every manifest of the invalid suite and no row left behind, list with scope
// filters, get (latest and ?version), versions, promote/demote with roles, delete, tenant isolation.
import test from 'ava';
import type { FastifyInstance } from 'fastify';
import { registerWorkflowRoutes } from '../../src/gateway/http/workflow-routes.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg } from '../../src/storage/pg.ts';
import { WorkflowDefinitionService } from '../../src/workflow/registry/service.ts';
import { httpCall, startAuthedApp, type CallOptions, type Res } from '../support/http-app.ts';
import { makeTestIdp } from '../support/jwks.ts';
import { createTestDatabase, type TestDatabase } from '../support/pg.ts';
import { invalidFixtures } from './manifest-fixtures.ts';

let app: FastifyInstance;
let db: Db;
let database: TestDatabase;
let base: string;
let idp: Awaited<ReturnType<typeof makeTestIdp>>;
let alice: string;
let bob: string;
let admin: string;
let ops: string;
let carol: string;

const wf = (name: string, version: string): string => `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: ${name}, version: ${version} }
spec:
  initial_state: ask
  states:
    ask:
      kind: Human
      prompt: Go?
      transitions: [ { condition: input_equals_yes, target: go }, { target: go } ]
    go: { kind: System, command: "echo go", transitions: [] }
`;

test.before(async () => {
  idp = await makeTestIdp();
  database = await createTestDatabase({ migrated: true });
  db = await openPg(database.url, { poolSize: 4 });
  await migrate(db);
  ({ app, base } = await startAuthedApp(idp, (a) => registerWorkflowRoutes(a, new WorkflowDefinitionService(db, silentLogger()))));
  alice = await idp.sign({ sub: 'alice', tenant_id: 'acme' });
  bob = await idp.sign({ sub: 'bob', tenant_id: 'acme' });
  admin = await idp.sign({ sub: 'ann', tenant_id: 'acme', realm_access: { roles: ['tenant-admin'] } });
  ops = await idp.sign({ sub: 'root', tenant_id: 'acme', realm_access: { roles: ['operator'] } });
  carol = await idp.sign({ sub: 'carol', tenant_id: 'globex' });
});

test.after.always(async () => {
  await app?.close();
  await db?.close();
  await database?.drop();
});

function call(method: string, p: string, opts: CallOptions = {}): Promise<Res> {
  return httpCall(base, method, p, opts);
}

async function rows(name?: string): Promise<number> {
  const r = await db.query<{ n: string }>(`SELECT count(*)::TEXT AS n FROM workflows${name ? ' WHERE name = $1' : ''}`, name ? [name] : []);
  return Number(r.rows[0]?.n);
}

test('without a token every workflow route is 401', async (t) => {
  for (const [method, p] of [['GET', '/v1/workflows'], ['POST', '/v1/workflows'], ['GET', '/v1/workflows/x'], ['DELETE', '/v1/workflows/x'], ['GET', '/v1/workflows/x/versions'], ['POST', '/v1/workflows/x/promote'], ['POST', '/v1/workflows/x/demote']] as const) {
    const res = await call(method, p, method === 'POST' ? { json: { manifest_yaml: wf('x', '1.0.0') } } : {});
    t.is(res.status, 401, `${method} ${p}`);
  }
});

test('every manifest of the invalid suite is 422 naming its field, and none deploys', async (t) => {
  const before = await rows();
  const fixtures = invalidFixtures();
  t.true(fixtures.length >= 30);
  for (const fx of fixtures) {
    const res = await call('POST', '/v1/workflows', { token: alice, json: { manifest_yaml: fx.text } });
    t.is(res.status, 422, `${fx.file}: ${res.text}`);
    t.is(res.body.error, 'invalid workflow manifest');
    const errors = res.body.errors as { field: string; message: string }[];
    t.true(errors.some((e) => e.field === fx.field && e.message.includes(fx.message)), `${fx.file}: ${res.text}`);
    // The raw YAML body form refuses it the same way.
    t.is((await call('POST', '/v1/workflows', { token: alice, yaml: fx.text })).status, 422, fx.file);
  }
  t.is(await rows(), before, 'no row was written');
});

// Issue 15 item 10: docs/WORKFLOWS.md promises every problem at once; a state's bad `kind` (a schema error) hid a
// transition to a state that does not exist (a reference the semantic pass checks) until the kind was fixed.
test('a bad kind and a bad target in one manifest: both in the one 422', async (t) => {
  const yaml = `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: two-problems, version: 1.0.0 }
spec:
  initial_state: strat
  states:
    start: { kind: Sytem, command: "echo hi", transitions: [ { target: finish } ] }
    end: { kind: System, command: "true", transitions: [ { target: nowhere } ] }
`;
  const res = await call('POST', '/v1/workflows', { token: alice, json: { manifest_yaml: yaml } });
  t.is(res.status, 422, res.text);
  const errors = res.body.errors as { field: string; message: string }[];
  t.deepEqual(
    errors.map((e) => e.field).sort(),
    ['spec.initial_state', 'spec.states.end.transitions[0].target', 'spec.states.start.kind', 'spec.states.start.transitions[0].target'],
    res.text,
  );
  t.true(errors.some((e) => e.field === 'spec.states.start.kind' && /must be one of Agent, System/.test(e.message)));
  t.true(errors.some((e) => e.field === 'spec.states.end.transitions[0].target' && e.message === 'names no state: "nowhere" is not in spec.states'));
  t.true(errors.some((e) => e.field === 'spec.initial_state' && e.message.startsWith('names no state: "strat"')));
  t.is(await rows('two-problems'), 0);
});

test.serial('deploy (JSON and YAML bodies), 409, force; get latest and ?version; versions', async (t) => {
  const created = await call('POST', '/v1/workflows', { token: alice, json: { manifest_yaml: wf('approve-flow', '1.0.0') } });
  t.is(created.status, 201, created.text);
  t.like(created.body, { name: 'approve-flow', version: '1.0.0', scope: 'tenant' });
  t.regex(String(created.body.workflow_id), /^[0-9a-f-]{36}$/);
  const dup = await call('POST', '/v1/workflows', { token: bob, yaml: wf('approve-flow', '1.0.0') });
  t.is(dup.status, 409);
  t.regex(String(dup.body.error), /already exists/);
  const forced = await call('POST', '/v1/workflows?force=true', { token: bob, yaml: wf('approve-flow', '1.0.0') });
  t.is(forced.status, 201, forced.text);
  t.is(forced.body.workflow_id, created.body.workflow_id);
  t.is((await call('POST', '/v1/workflows', { token: alice, yaml: wf('approve-flow', '1.1.0') })).status, 201);

  const latest = await call('GET', '/v1/workflows/approve-flow', { token: alice });
  t.is(latest.status, 200);
  t.like(latest.body, { name: 'approve-flow', version: '1.1.0', scope: 'tenant', tenant_id: 'acme' });
  t.is((latest.body.manifest as { spec: { max_total_transitions: number } }).spec.max_total_transitions, 50);
  t.regex(String(latest.body.manifest_yaml), /kind: Workflow/);
  const old = await call('GET', '/v1/workflows/approve-flow?version=1.0.0', { token: alice });
  t.like(old.body, { version: '1.0.0', workflow_id: created.body.workflow_id, deployed_by: 'bob' });
  t.is((await call('GET', `/v1/workflows/${String(created.body.workflow_id)}`, { token: alice })).body.version, '1.0.0');
  t.is((await call('GET', '/v1/workflows/approve-flow?version=9.0.0', { token: alice })).status, 404);
  const versions = await call('GET', '/v1/workflows/approve-flow/versions', { token: alice });
  t.deepEqual((versions.body.versions as { version: string; latest: boolean }[]).map((v) => [v.version, v.latest]), [['1.1.0', true], ['1.0.0', false]]);

  const missing = await call('GET', '/v1/workflows/nope', { token: alice });
  t.is(missing.status, 404);
  t.deepEqual(missing.body, { error: 'Workflow not found' });
  t.is((await call('GET', '/v1/workflows/approve-flow', { token: carol })).status, 404, 'another tenant');
  t.is((await call('POST', '/v1/workflows', { token: alice, json: { manifest_yaml: 7 } })).status, 400);
  t.is((await call('POST', '/v1/workflows', { token: alice, json: { manifest_yaml: wf('x', '1.0.0'), scope: 'planet' } })).status, 400);
});

test.serial('scopes over HTTP: list filters, global needs an operator, promote and demote with roles', async (t) => {
  t.is((await call('POST', '/v1/workflows', { token: alice, json: { manifest_yaml: wf('mine', '1.0.0'), scope: 'global' } })).status, 403);
  t.is((await call('POST', '/v1/workflows?scope=user', { token: alice, yaml: wf('mine', '1.0.0') })).status, 201);
  const aliceList = await call('GET', '/v1/workflows?scope=user', { token: alice });
  t.deepEqual((aliceList.body.workflows as { name: string; owner: string }[]).map((w) => [w.name, w.owner]), [['mine', 'alice']]);
  t.deepEqual((await call('GET', '/v1/workflows?scope=user', { token: bob })).body.workflows, []);
  t.is((await call('GET', '/v1/workflows/mine', { token: bob })).status, 404);
  t.is((await call('GET', '/v1/workflows?scope=planet', { token: bob })).status, 400);

  t.is((await call('POST', '/v1/workflows/mine/promote', { token: alice, json: { target_scope: 'tenant' } })).status, 403);
  const promoted = await call('POST', '/v1/workflows/mine/promote', { token: admin, json: { target_scope: 'tenant', user_id: 'alice' } });
  t.is(promoted.status, 200, promoted.text);
  t.like(promoted.body, { name: 'mine', promoted: true, target_scope: 'tenant', from_scope: 'user' });
  t.is((await call('GET', '/v1/workflows/mine', { token: bob })).body.scope, 'tenant');
  t.is((await call('POST', '/v1/workflows/mine/promote', { token: admin })).status, 403, 'to global needs an operator');
  const global = await call('POST', '/v1/workflows/mine/promote', { token: ops });
  t.like(global.body, { promoted: true, target_scope: 'global' });
  t.is((await call('GET', '/v1/workflows/mine', { token: carol })).body.scope, 'global', 'every tenant sees it');
  t.deepEqual((await call('GET', '/v1/workflows?scope=global', { token: carol })).body.workflows instanceof Array, true);
  t.is((await call('DELETE', '/v1/workflows/mine', { token: carol })).status, 403);
  const demoted = await call('POST', '/v1/workflows/mine/demote', { token: ops, json: { target_scope: 'tenant' } });
  t.like(demoted.body, { demoted: true, target_scope: 'tenant' });
  t.is((await call('GET', '/v1/workflows/mine', { token: carol })).status, 404);
  const toUser = await call('POST', '/v1/workflows/mine/demote', { token: admin, json: { target_scope: 'user', user_id: 'bob' } });
  t.like(toUser.body, { demoted: true, target_scope: 'user' });
  t.is((await call('GET', '/v1/workflows/mine', { token: bob })).body.owner, 'bob');
  t.is((await call('POST', '/v1/workflows/mine/demote', { token: admin, json: { target_scope: 'global' } })).status, 400);
});

test.serial('delete one version, then the workflow', async (t) => {
  await call('POST', '/v1/workflows', { token: alice, yaml: wf('short-lived', '1.0.0') });
  await call('POST', '/v1/workflows', { token: alice, yaml: wf('short-lived', '2.0.0') });
  const one = await call('DELETE', '/v1/workflows/short-lived?version=2.0.0', { token: alice });
  t.is(one.status, 200, one.text);
  t.like(one.body, { name: 'short-lived', deleted: true, versions: ['2.0.0'] });
  t.is((await call('GET', '/v1/workflows/short-lived', { token: alice })).body.version, '1.0.0');
  t.like((await call('DELETE', '/v1/workflows/short-lived', { token: alice })).body, { deleted: true, versions: ['1.0.0'] });
  t.is(await rows('short-lived'), 0);
  t.is((await call('DELETE', '/v1/workflows/short-lived', { token: alice })).status, 404);
});
