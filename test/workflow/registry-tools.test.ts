// The orch.workflow.* registry tools through the node's real tool catalog and a real WorkflowDefinitionService on
// PostgreSQL: create (409 without force, InvalidManifest naming fields, judges refused as not built), update,
// export, list scopes, validate, promote/demote roles, delete, search (`Cortex not configured`), and
// orch.schema.get/validate for workflows.
import test from 'ava';
import { readFileSync } from 'node:fs';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg } from '../../src/storage/pg.ts';
import { createToolCatalog } from '../../src/tools/catalog.ts';
import type { ToolCallContext, ToolOutcome } from '../../src/tools/types.ts';
import { nodeContexts } from '../../src/tools/policy.ts';
import { workflowManifestSchema } from '../../src/workflow/manifest/schema.ts';
import { WorkflowDefinitionService } from '../../src/workflow/registry/service.ts';
import { createTestDatabase, type TestDatabase } from '../support/pg.ts';
import { callContext, nodeConfig, principal } from '../tools/helpers.ts';
import { invalidFixtures } from './manifest-fixtures.ts';

let db: Db;
let database: TestDatabase;
let catalog: ReturnType<typeof createToolCatalog>;
const bare = createToolCatalog({ config: nodeConfig(), logger: silentLogger() });

const sys = nodeContexts['orch-system-agent-runtime']!;
const as = (roles: ('operator' | 'tenant-admin')[] = [], subject = 'alice', tenant = 'acme'): ToolCallContext => {
  const p = principal(roles, tenant, subject);
  return callContext({ ...sys }, { principal: p, tenantId: tenant });
};
const alice = as();
const bob = as([], 'bob');
const admin = as(['tenant-admin'], 'ann');
const ops = as(['operator'], 'root');

const wf = (name: string, version: string): string => `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: ${name}, version: ${version}, description: "the ${name} flow" }
spec:
  initial_state: work
  states:
    work: { kind: System, command: "echo work", transitions: [ { condition: exit_code_zero, target: end }, { target: end } ] }
    end: { kind: System, command: "echo end", transitions: [] }
`;

function result(o: ToolOutcome): Record<string, unknown> {
  if (!o.ok) throw new Error(`${o.error.error}: ${o.error.message}`);
  return o.result as Record<string, unknown>;
}

test.before(async () => {
  database = await createTestDatabase({ migrated: true });
  db = await openPg(database.url, { poolSize: 4 });
  await migrate(db);
  catalog = createToolCatalog({ config: nodeConfig(), logger: silentLogger(), workflows: new WorkflowDefinitionService(db, silentLogger()) });
});

test.after.always(async () => {
  await db?.close();
  await database?.drop();
});

test('the registry tools are in the catalog with the seed skip_judge defaults', (t) => {
  const expect: Record<string, boolean> = {
    'orch.workflow.list': true,
    'orch.workflow.search': true,
    'orch.workflow.create': true,
    'orch.workflow.update': true,
    'orch.workflow.export': true,
    'orch.workflow.delete': false,
    'orch.workflow.validate': true,
    'orch.workflow.promote': false,
    'orch.workflow.demote': false,
  };
  for (const [name, skip] of Object.entries(expect)) t.is(catalog.skipJudge(name), skip, name);
  t.like(catalog.get('orch.workflow.create'), { required: ['manifest_yaml'] });
  t.like(catalog.get('orch.workflow.promote'), { required: ['name'] });
});

test('without the registry they answer NotAvailable; search needs Cortex', async (t) => {
  t.like(await bare.call(alice, 'orch.workflow.list', {}), { ok: false, error: { error: 'NotAvailable' } });
  const s = await catalog.call(alice, 'orch.workflow.search', { query: 'build' });
  t.false(s.ok);
  t.regex(s.ok ? '' : s.error.message, /Cortex not configured/);
  t.like(await catalog.call(alice, 'orch.workflow.create', {}), { ok: false, error: { error: 'InvalidArguments', message: 'missing required argument "manifest_yaml" for tool orch.workflow.create' } });
});

test.serial('orch.schema.get serves workflow/manifest/v1; orch.schema.validate and orch.workflow.validate check workflows', async (t) => {
  const before = await rowCount();
  t.deepEqual(await catalog.call(alice, 'orch.schema.get', { key: 'workflow/manifest/v1' }), { ok: true, result: workflowManifestSchema });
  t.deepEqual(result(await catalog.call(alice, 'orch.schema.validate', { kind: 'workflow', manifest_yaml: wf('ok', '1.0.0') })), { valid: true });
  for (const fx of invalidFixtures()) {
    const r = result(await catalog.call(alice, 'orch.schema.validate', { kind: 'workflow', manifest_yaml: fx.text }));
    t.false(r.valid as boolean, fx.file);
    t.true((r.errors as { field: string }[]).some((e) => e.field === fx.field), fx.file);
  }
  const v = result(await catalog.call(alice, 'orch.workflow.validate', { manifest_yaml: wf('ok', '1.0.0') }));
  t.like(v, { valid: true, metadata: { name: 'ok', version: '1.0.0', initial_state: 'work', states: 2, kinds: { System: 2 }, max_total_transitions: 50 } });
  const every = readFileSync(new URL('./fixtures/valid/every-kind.yaml', import.meta.url), 'utf8');
  t.like(result(await catalog.call(alice, 'orch.workflow.validate', { manifest_yaml: every })), { valid: true, metadata: { states: 9 } });
  const bad = result(await catalog.call(alice, 'orch.workflow.validate', { manifest_yaml: wf('ok', '1.0.0').replace('target: end }, {', 'target: gone }, {') }));
  t.like(bad, { valid: false });
  t.deepEqual((bad.errors as { field: string }[]).map((e) => e.field), ['spec.states.work.transitions[0].target']);
  t.is(await rowCount(), before, 'validation writes nothing');
});

async function rowCount(): Promise<number> {
  return Number((await db.query<{ n: string }>('SELECT count(*)::TEXT AS n FROM workflows')).rows[0]?.n);
}

test.serial('create, 409 without force, force; InvalidManifest names the field; judges are refused, not skipped', async (t) => {
  const c = result(await catalog.call(alice, 'orch.workflow.create', { manifest_yaml: wf('tooling', '1.0.0') }));
  t.like(c, { name: 'tooling', version: '1.0.0', scope: 'tenant', deployed: true, status: 'deployed', validation: { deterministic: { valid: true }, semantic_validation: { performed: false } } });
  t.regex(String(c.workflow_id), /^[0-9a-f-]{36}$/);
  const dup = await catalog.call(alice, 'orch.workflow.create', { manifest_yaml: wf('tooling', '1.0.0') });
  t.like(dup, { ok: false, error: { error: 'ALREADY_EXISTS' } });
  t.like(result(await catalog.call(alice, 'orch.workflow.create', { manifest_yaml: wf('tooling', '1.0.0'), force: true })), { workflow_id: c.workflow_id, replaced: true });
  const before = await rowCount();
  const invalid = await catalog.call(alice, 'orch.workflow.create', { manifest_yaml: wf('broken', '1.0.0').replace('initial_state: work', 'initial_state: nowhere') });
  t.like(invalid, { ok: false, error: { error: 'InvalidManifest' } });
  t.regex(invalid.ok ? '' : invalid.error.message, /spec\.initial_state: names no state/);
  const judged = await catalog.call(alice, 'orch.workflow.create', { manifest_yaml: wf('judged', '1.0.0'), judge_agents: ['critic'] });
  t.like(judged, { ok: false, error: { error: 'NotAvailable' } });
  t.regex(judged.ok ? '' : judged.error.message, /semantic validation by judge agents is not implemented/);
  t.is(await rowCount(), before, 'neither the invalid nor the judged manifest was written');
  t.like(await catalog.call(alice, 'orch.workflow.create', { manifest_yaml: wf('worldwide', '1.0.0'), scope: 'global' }), { ok: false, error: { error: 'PERMISSION_DENIED' } });
});

test.serial('update, export (latest and a version), list scopes, promote/demote, delete', async (t) => {
  await catalog.call(alice, 'orch.workflow.create', { manifest_yaml: wf('pipeline', '1.0.0') });
  const u = result(await catalog.call(bob, 'orch.workflow.update', { manifest_yaml: wf('pipeline', '1.1.0') }));
  t.like(u, { name: 'pipeline', version: '1.1.0', updated: true, scope: 'tenant' });
  t.like(await catalog.call(bob, 'orch.workflow.update', { manifest_yaml: wf('never-made', '1.0.0') }), { ok: false, error: { error: 'NOT_FOUND' } });

  const ex = result(await catalog.call(alice, 'orch.workflow.export', { name: 'pipeline' }));
  t.like(ex, { name: 'pipeline', version: '1.1.0', workflow_id: u.workflow_id, scope: 'tenant', description: 'the pipeline flow' });
  t.regex(String(ex.manifest_yaml), /^apiVersion: orch.dev\/v1/);
  t.is(ex.manifest, undefined, 'export gives the YAML, not the parsed form');
  t.is(result(await catalog.call(alice, 'orch.workflow.export', { name: 'pipeline', version: '1.0.0' })).version, '1.0.0');
  t.like(await catalog.call(as([], 'carol', 'globex'), 'orch.workflow.export', { name: 'pipeline' }), { ok: false, error: { error: 'NOT_FOUND' } });

  const tenantList = result(await catalog.call(alice, 'orch.workflow.list', {}));
  const entry = (tenantList.workflows as Record<string, unknown>[]).find((w) => w.name === 'pipeline');
  t.like(entry, { id: u.workflow_id, name: 'pipeline', version: '1.1.0', initial_state: 'work', scope: 'tenant', versions: 2 });
  t.like(await catalog.call(alice, 'orch.workflow.list', { tenant_id: 'globex' }), { ok: false, error: { error: 'PERMISSION_DENIED' } });
  t.like(await catalog.call(alice, 'orch.workflow.list', { scope: 'visible', user_id: 'bob' }), { ok: false, error: { error: 'PERMISSION_DENIED' } });

  // user scope → tenant needs a tenant-admin; tenant → global an operator.
  await catalog.call(bob, 'orch.workflow.create', { manifest_yaml: wf('private', '0.1.0'), scope: 'user' });
  const bobVisible = result(await catalog.call(admin, 'orch.workflow.list', { scope: 'visible', user_id: 'bob' }));
  t.true((bobVisible.workflows as { name: string; scope: string }[]).some((w) => w.name === 'private' && w.scope === 'user'));
  t.like(await catalog.call(bob, 'orch.workflow.promote', { name: 'private', target_scope: 'tenant' }), { ok: false, error: { error: 'PERMISSION_DENIED' } });
  const p = result(await catalog.call(admin, 'orch.workflow.promote', { name: 'private', target_scope: 'tenant', user_id: 'bob' }));
  t.like(p, { name: 'private', promoted: true, target_scope: 'tenant' });
  t.like(await catalog.call(admin, 'orch.workflow.promote', { name: 'private' }), { ok: false, error: { error: 'PERMISSION_DENIED' } });
  t.like(result(await catalog.call(ops, 'orch.workflow.promote', { name: 'private' })), { promoted: true, target_scope: 'global', workflow_id: p.workflow_id });
  const globals = result(await catalog.call(as([], 'carol', 'globex'), 'orch.workflow.list', { scope: 'global' }));
  t.deepEqual((globals.workflows as { name: string }[]).map((w) => w.name), ['private']);
  t.like(result(await catalog.call(ops, 'orch.workflow.demote', { name: 'private' })), { demoted: true, target_scope: 'tenant' });
  t.like(result(await catalog.call(admin, 'orch.workflow.demote', { name: 'private', target_scope: 'user', user_id: 'bob' })), { demoted: true, target_scope: 'user' });
  t.like(await catalog.call(alice, 'orch.workflow.export', { name: 'private' }), { ok: false, error: { error: 'NOT_FOUND' } }, "bob's again");

  const d = result(await catalog.call(alice, 'orch.workflow.delete', { name: 'pipeline' }));
  t.like(d, { name: 'pipeline', deleted: true });
  t.deepEqual(d.versions, ['1.1.0', '1.0.0']);
  t.like(await catalog.call(alice, 'orch.workflow.delete', { name: 'pipeline' }), { ok: false, error: { error: 'NOT_FOUND' } });
});
