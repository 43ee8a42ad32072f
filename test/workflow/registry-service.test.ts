// WorkflowDefinitionService on both engines (PGlite in process, real PostgreSQL in a throwaway database): deploy,
// 409 without force and force in place, latest = highest semantic version, resolve by name/id/version with the
// user → tenant → global shadowing, tenant isolation, promote/demote with their roles, delete, and nothing written
// for an invalid manifest.
import test from 'ava';
import { Errors, OrchError } from '../../src/errors/catalog.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { WorkflowDefinitionService, WorkflowManifestInvalid } from '../../src/workflow/registry/service.ts';
import { freshPg, freshPglite, sharedDb, type Fresh } from '../support/engines.ts';

const wf = (name: string, version: string, command = 'echo hi'): string => `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: ${name}, version: ${version}, description: "${name} ${version}", labels: { team: core } }
spec:
  initial_state: run
  states:
    run:
      kind: System
      command: ${command}
      transitions: []
`;

const alice = { tenant: 'acme', subject: 'alice' };
const bob = { tenant: 'acme', subject: 'bob' };
const carol = { tenant: 'globex', subject: 'carol' };
const admin = { tenant: 'acme', subject: 'ann', roles: ['tenant-admin' as const] };
const ops = { tenant: 'orch-system', subject: 'root', roles: ['operator' as const] };

function isError(kind: (typeof Errors)[keyof typeof Errors], message?: RegExp) {
  return (err: unknown): boolean => err instanceof OrchError && err.spec === kind && (message === undefined || message.test(err.message));
}

function suite(kind: string, fresh: Fresh): void {
  const shared = sharedDb(test, fresh);
  const setup = async (): Promise<{ svc: WorkflowDefinitionService; db: Db }> => {
    const db = shared();
    await db.query('DELETE FROM workflows');
    return { svc: new WorkflowDefinitionService(db, silentLogger()), db };
  };

  test.serial(`${kind}: deploy, get, resolve (the contract of the engine) and list`, async (t) => {
    const { svc } = await setup();
    const res = await svc.deploy({ ...alice, yaml: wf('build', '1.0.0') });
    t.regex(res.workflow_id, /^[0-9a-f-]{36}$/);
    t.like(res, { name: 'build', version: '1.0.0', scope: 'tenant', replaced: false });
    const def = await svc.resolve('acme', 'build');
    if (!def) return t.fail('not resolved');
    t.like(def, { id: res.workflow_id, name: 'build', version: '1.0.0', scope: 'tenant', tenant_id: 'acme' });
    t.is(def.manifest.spec.states.run?.max_state_visits, 5, 'the stored manifest is the defaulted one');
    t.regex(def.manifest_yaml, /command: echo hi/);
    t.regex(def.created_at, /^\d{4}-\d\d-\d\dT/);
    t.deepEqual((await svc.resolve('acme', res.workflow_id))?.id, res.workflow_id, 'by workflow_id');
    t.is(await svc.resolve('acme', 'build', '9.9.9'), undefined);
    t.is(await svc.resolve('acme', 'nope'), undefined);
    t.is(await svc.resolve('globex', 'build'), undefined, 'another tenant does not see it');
    t.is(await svc.resolve('globex', res.workflow_id), undefined, 'nor by id');
    const list = await svc.list('acme', alice);
    t.deepEqual(list.map((w) => [w.name, w.version, w.scope, w.initial_state, w.versions]), [['build', '1.0.0', 'tenant', 'run', 1]]);
    t.deepEqual(list[0]!.labels, { team: 'core' });
    t.deepEqual(await svc.list('globex', carol), []);
    // Several names in one scope are separate workflows, each with its own latest version and count.
    await svc.deploy({ ...alice, yaml: wf('alpha', '0.1.0') });
    await svc.deploy({ ...alice, yaml: wf('alpha', '0.2.0') });
    t.deepEqual((await svc.list('acme', alice)).map((w) => [w.name, w.version, w.versions]), [['alpha', '0.2.0', 2], ['build', '1.0.0', 1]]);
    const detail = await svc.get('acme', 'build', alice);
    t.like(detail, { workflow_id: res.workflow_id, deployed_by: 'alice', description: 'build 1.0.0', owner: null });
  });

  test.serial(`${kind}: 409 without force; force replaces in place and keeps the id`, async (t) => {
    const { svc } = await setup();
    const first = await svc.deploy({ ...alice, yaml: wf('build', '1.0.0') });
    const e = await t.throwsAsync(svc.deploy({ ...bob, yaml: wf('build', '1.0.0', 'echo two') }));
    t.true(isError(Errors.CONFLICT, /already exists in tenant scope/)(e));
    t.regex((await svc.resolve('acme', 'build'))!.manifest_yaml, /echo hi/, 'the 409 changed nothing');
    const forced = await svc.deploy({ ...bob, yaml: wf('build', '1.0.0', 'echo two'), force: true });
    t.like(forced, { workflow_id: first.workflow_id, replaced: true });
    const def = await svc.resolve('acme', 'build');
    t.regex(def!.manifest_yaml, /echo two/);
    t.is((await svc.get('acme', 'build', alice)).deployed_by, 'bob');
  });

  test.serial(`${kind}: latest is the highest semantic version; versions and ?version`, async (t) => {
    const { svc } = await setup();
    await svc.deploy({ ...alice, yaml: wf('build', '1.2.0') });
    await svc.deploy({ ...alice, yaml: wf('build', '1.10.0') });
    await svc.deploy({ ...alice, yaml: wf('build', '1.10.0-rc.1') });
    await svc.deploy({ ...alice, yaml: wf('build', '1.9.3') }); // deployed last, still not the latest
    t.is((await svc.resolve('acme', 'build'))?.version, '1.10.0');
    t.is((await svc.resolve('acme', 'build', '1.2.0'))?.version, '1.2.0');
    const v = await svc.versions('acme', 'build', alice);
    t.deepEqual(v.versions.map((x) => [x.version, x.latest]), [['1.10.0', true], ['1.10.0-rc.1', false], ['1.9.3', false], ['1.2.0', false]]);
    t.is((await svc.list('acme', alice))[0]?.versions, 4);
    t.is((await svc.get('acme', 'build', alice, '1.9.3')).version, '1.9.3');
    await t.throwsAsync(svc.get('acme', 'build', alice, '3.0.0'), { message: /no version 3.0.0/ });
  });

  test.serial(`${kind}: scopes: user shadows tenant shadows global; user scope is the owner's only; global needs an operator`, async (t) => {
    const { svc } = await setup();
    await t.throwsAsync(svc.deploy({ ...alice, yaml: wf('shared', '1.0.0'), scope: 'global' }), { message: /requires role operator/ });
    const g = await svc.deploy({ ...ops, yaml: wf('shared', '1.0.0'), scope: 'global' });
    t.like(await svc.resolve('globex', 'shared'), { id: g.workflow_id, scope: 'global', tenant_id: 'orch-system' });
    const tn = await svc.deploy({ ...alice, yaml: wf('shared', '1.0.0') });
    const us = await svc.deploy({ ...alice, yaml: wf('shared', '1.0.0'), scope: 'user' });
    t.is((await svc.resolve('acme', 'shared', undefined, 'alice'))?.id, us.workflow_id, 'alice: her own first');
    t.is((await svc.resolve('acme', 'shared', undefined, 'bob'))?.id, tn.workflow_id, 'bob: the tenant one');
    t.is((await svc.resolve('acme', 'shared'))?.id, tn.workflow_id, 'the engine without a user: the tenant one');
    t.is((await svc.resolve('globex', 'shared'))?.id, g.workflow_id, 'another tenant: the global one');
    t.is(await svc.resolve('acme', us.workflow_id, undefined, 'bob'), undefined, "bob cannot reach alice's by id");
    // A version only global has resolves past the scopes that lack it.
    await svc.deploy({ ...ops, yaml: wf('shared', '2.0.0'), scope: 'global' });
    t.is((await svc.resolve('acme', 'shared', '2.0.0', 'alice'))?.scope, 'global');
    const scopes = (await svc.list('acme', alice)).map((w) => [w.name, w.scope, w.version]);
    t.deepEqual(scopes, [['shared', 'user', '1.0.0'], ['shared', 'tenant', '1.0.0'], ['shared', 'global', '2.0.0']]);
    t.deepEqual((await svc.list('acme', bob)).map((w) => w.scope), ['tenant', 'global']);
    t.deepEqual((await svc.list('acme', alice, 'global')).map((w) => w.scope), ['global']);
    t.deepEqual((await svc.list('acme', alice, 'user')).map((w) => w.owner), ['alice']);
    await t.throwsAsync(svc.remove('acme', g.workflow_id, alice), { message: /requires role operator/ });
  });

  test.serial(`${kind}: promote user → tenant → global and demote back, with roles and collisions`, async (t) => {
    const { svc } = await setup();
    const mine = await svc.deploy({ ...alice, yaml: wf('flow', '1.0.0'), scope: 'user' });
    await svc.deploy({ ...alice, yaml: wf('flow', '1.1.0'), scope: 'user' });
    await t.throwsAsync(svc.promote('acme', 'flow', alice, { target_scope: 'tenant' }), { message: /requires role operator or tenant-admin/ });
    const p = await svc.promote('acme', 'flow', admin, { target_scope: 'tenant', user_id: 'alice' });
    t.like(p, { name: 'flow', from_scope: 'user', target_scope: 'tenant' });
    t.deepEqual(p.versions, ['1.1.0', '1.0.0']);
    t.like(await svc.resolve('acme', 'flow', '1.0.0', 'bob'), { id: mine.workflow_id, scope: 'tenant' }, 'bob sees it now, same id');
    await t.throwsAsync(svc.promote('acme', 'flow', admin), { message: /requires role operator/ }, 'global needs an operator');
    const opsInAcme = { ...ops, tenant: 'acme' };
    t.like(await svc.promote('acme', 'flow', opsInAcme), { target_scope: 'global' });
    t.like(await svc.resolve('globex', 'flow'), { scope: 'global', version: '1.1.0' });
    t.is((await svc.list('acme', alice, 'tenant')).length, 0);
    // Demote global → tenant (operator), then tenant → user for bob (tenant-admin).
    await t.throwsAsync(svc.demote('acme', 'flow', admin), { message: /requires role operator/ });
    t.like(await svc.demote('acme', 'flow', opsInAcme, { target_scope: 'tenant' }), { target_scope: 'tenant' });
    t.is(await svc.resolve('globex', 'flow'), undefined);
    t.like(await svc.demote('acme', 'flow', admin, { target_scope: 'user', user_id: 'bob', version: '1.0.0' }), { versions: ['1.0.0'] });
    t.is((await svc.resolve('acme', 'flow', undefined, 'bob'))?.scope, 'user');
    t.is((await svc.resolve('acme', 'flow', undefined, 'bob'))?.version, '1.0.0');
    t.is((await svc.resolve('acme', 'flow', undefined, 'alice'))?.version, '1.1.0');
    // A collision moves nothing.
    await svc.deploy({ ...bob, yaml: wf('clash', '1.0.0'), scope: 'user' });
    await svc.deploy({ ...alice, yaml: wf('clash', '1.0.0') });
    await t.throwsAsync(svc.promote('acme', 'clash', admin, { target_scope: 'tenant', user_id: 'bob' }), { message: /already has version 1.0.0 in tenant scope/ });
    t.is((await svc.resolve('acme', 'clash', undefined, 'bob'))?.scope, 'user');
    await t.throwsAsync(svc.promote('acme', 'ghost', admin, { target_scope: 'tenant' }), { message: /not deployed in user scope/ });
    await t.throwsAsync(svc.promote('acme', 'flow', admin, { target_scope: 'user' }), { message: /must be tenant or global/ });
  });

  test.serial(`${kind}: update and delete (a version, an id, the whole workflow)`, async (t) => {
    const { svc } = await setup();
    await t.throwsAsync(svc.update('acme', wf('later', '1.0.0'), alice), { message: /not deployed/ });
    await svc.deploy({ ...alice, yaml: wf('later', '1.0.0') });
    t.like(await svc.update('acme', wf('later', '1.1.0'), bob), { scope: 'tenant', version: '1.1.0' });
    await t.throwsAsync(svc.update('acme', wf('later', '1.1.0'), bob), { message: /already exists/ });
    const v2 = await svc.deploy({ ...alice, yaml: wf('later', '2.0.0') });
    t.like(await svc.remove('acme', 'later', alice, '1.0.0'), { deleted: true, versions: ['1.0.0'] });
    t.like(await svc.remove('acme', v2.workflow_id, alice), { workflow_id: v2.workflow_id, versions: ['2.0.0'] });
    t.is((await svc.resolve('acme', 'later'))?.version, '1.1.0');
    t.like(await svc.remove('acme', 'later', alice), { deleted: true, versions: ['1.1.0'] });
    t.is(await svc.resolve('acme', 'later'), undefined);
    await t.throwsAsync(svc.remove('acme', 'later', alice), { message: /Workflow not found/ });
  });

  test.serial(`${kind}: an invalid manifest writes nothing`, async (t) => {
    const { svc, db } = await setup();
    const err = await t.throwsAsync(svc.deploy({ ...alice, yaml: wf('bad', '1.0.0').replace('initial_state: run', 'initial_state: nowhere') }), { instanceOf: WorkflowManifestInvalid });
    t.is(err?.spec.http, 422);
    t.deepEqual(err?.errors.map((e) => e.field), ['spec.initial_state']);
    t.is((await db.query<{ n: string }>('SELECT count(*)::TEXT AS n FROM workflows')).rows[0]?.n, '0');
    await t.throwsAsync(svc.deploy({ ...alice, yaml: wf('bad', '1.0.0'), scope: 'planet' as never }), { message: /scope must be one of/ });
  });
}

suite('pglite', freshPglite('orch-workflows-'));
suite('pg', freshPg);
