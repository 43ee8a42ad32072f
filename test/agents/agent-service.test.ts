// AgentService on both engines (PGlite in process, real PostgreSQL in a throwaway database): deploy, 409 without
// force, force overwrites, versions kept, tenant isolation, global and user scopes, update and delete.
import test from 'ava';
import { Errors, OrchError } from '../../src/errors/catalog.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { AgentManifestInvalid, AgentService } from '../../src/agents/service.ts';
import { freshPg, freshPglite, sharedDb, type Fresh } from '../support/engines.ts';
import { recordQueries } from '../support/query-recorder.ts';

const manifest = (name: string, version: string, instruction = 'Say hello.'): string => `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: ${name}, version: ${version}, description: "${name} v${version}" }
spec:
  runtime: { language: python, version: "3.12" }
  task: { instruction: ${instruction} }
  tools: [ fs.read ]
`;

const alice = { tenant: 'acme', subject: 'alice' };
const bob = { tenant: 'acme', subject: 'bob' };
const carol = { tenant: 'globex', subject: 'carol' };
const ops = { tenant: 'orch-system', subject: 'root', roles: ['operator' as const] };

function isError(kind: (typeof Errors)[keyof typeof Errors], message?: RegExp) {
  return (err: unknown): boolean => err instanceof OrchError && err.spec === kind && (message === undefined || message.test(err.message));
}

/** One database per engine, shared by that engine's tests, which run one after another on emptied tables. */
function suite(kind: string, fresh: Fresh): void {
  const shared = sharedDb(test, fresh);
  const setup = async (_t: import('ava').ExecutionContext): Promise<AgentService> => {
    const db = shared();
    await db.query('DELETE FROM agent_versions');
    await db.query('DELETE FROM agents');
    return new AgentService(db, silentLogger());
  };

  test.serial(`${kind}: deploy, lookup, get and the execution engine's manifest`, async (t) => {
    const agents = await setup(t);
    const res = await agents.deploy({ ...alice, yaml: manifest('hello', '1.0.0') });
    t.regex(res.agent_id, /^[0-9a-f-]{36}$/);
    t.like(res, { name: 'hello', version: '1.0.0', created: true, replaced: false });
    t.like(await agents.lookup('acme', 'hello'), { agent_id: res.agent_id, name: 'hello', tenant_id: 'acme', version: '1.0.0', scope: 'tenant' });
    const detail = await agents.get('acme', res.agent_id, alice);
    t.is(detail.manifest.spec.runtime.isolation, 'inherit');
    t.regex(detail.manifest_yaml, /name: hello/);
    t.deepEqual((await agents.get('acme', 'hello')).agent_id, res.agent_id);
    const m = await agents.getManifest('acme', res.agent_id);
    t.like(m, { agent_id: res.agent_id, name: 'hello', version: '1.0.0' });
    t.deepEqual(m.manifest.spec.tools, [{ name: 'fs.read' }]);
    t.is((await agents.manifestByName('acme', 'hello')).metadata.name, 'hello');
    const list = await agents.list('acme', alice);
    t.deepEqual(list.map((a) => [a.agent_id, a.name, a.tenant_id, a.version]), [[res.agent_id, 'hello', 'acme', '1.0.0']]);
  });

  test.serial(`${kind}: the execution engine's manifest is one statement — by id or name, current or asked version, own before global`, async (t) => {
    // Issue 24: every execution start reads it; it was the agent row, then its version (two round trips).
    await setup(t);
    const rec = recordQueries(shared());
    const agents = new AgentService(rec.db, silentLogger());
    const g = await agents.deploy({ ...ops, yaml: manifest('shared', '1.0.0', 'Global.'), scope: 'global' });
    const own = await agents.deploy({ ...alice, yaml: manifest('shared', '1.0.0', 'Own one.') });
    await agents.deploy({ ...alice, yaml: manifest('shared', '2.0.0', 'Own two.') });
    const calls = (): number => rec.statements().reduce((n, s) => n + s.calls, 0);
    const read = async (tenant: string, id: string, version?: string): Promise<[string, string, string]> => {
      rec.clear();
      const m = await agents.getManifest(tenant, id, version);
      t.is(calls(), 1, `${tenant} ${id} ${version ?? ''}: one statement`);
      return [m.agent_id, m.version, m.manifest.spec.task.instruction];
    };
    t.deepEqual(await read('acme', 'shared'), [own.agent_id, '2.0.0', 'Own two.'], 'the tenant\'s own shadows the global one');
    t.deepEqual(await read('acme', own.agent_id, '1.0.0'), [own.agent_id, '1.0.0', 'Own one.']);
    t.deepEqual(await read('globex', 'shared'), [g.agent_id, '1.0.0', 'Global.']);
    t.deepEqual(await read('acme', g.agent_id), [g.agent_id, '1.0.0', 'Global.'], 'a global agent by id');
    t.regex((await agents.getManifest('acme', own.agent_id)).manifest_yaml, /Own two\./);
    await t.throwsAsync(agents.getManifest('acme', own.agent_id, '3.0.0'), { message: 'agent shared has no version 3.0.0' });
    await t.throwsAsync(agents.getManifest('acme', 'nobody'), { message: 'Agent not found' });
  });

  test.serial(`${kind}: an invalid manifest is rejected before anything is written`, async (t) => {
    const agents = await setup(t);
    const err = await t.throwsAsync(agents.deploy({ ...alice, yaml: manifest('hello', '1.0.0').replace('fs.read', 'fs.nope') }), { instanceOf: AgentManifestInvalid });
    t.is(err?.spec.http, 422);
    t.deepEqual(err?.errors.map((e) => e.field), ['spec.tools[0]']);
    t.deepEqual(await agents.list('acme', alice), []);
  });

  test.serial(`${kind}: same name and version is 409 without force; force replaces it in place`, async (t) => {
    const agents = await setup(t);
    const first = await agents.deploy({ ...alice, yaml: manifest('hello', '1.0.0', 'First.') });
    const dup = await t.throwsAsync(agents.deploy({ ...alice, yaml: manifest('hello', '1.0.0', 'Second.') }), { instanceOf: OrchError, message: /already exists/ });
    t.true(isError(Errors.CONFLICT)(dup));
    t.is((await agents.getManifest('acme', first.agent_id)).manifest.spec.task.instruction, 'First.');
    const forced = await agents.deploy({ ...alice, yaml: manifest('hello', '1.0.0', 'Second.'), force: true });
    t.like(forced, { agent_id: first.agent_id, created: false, replaced: true });
    t.is((await agents.getManifest('acme', first.agent_id)).manifest.spec.task.instruction, 'Second.');
    t.is((await agents.versions('acme', 'hello', alice)).versions.length, 1);
  });

  test.serial(`${kind}: new versions are kept under one agent_id; the last deployed is current`, async (t) => {
    const agents = await setup(t);
    const v1 = await agents.deploy({ ...alice, yaml: manifest('hello', '1.0.0', 'One.') });
    const v2 = await agents.deploy({ ...alice, yaml: manifest('hello', '2.0.0', 'Two.') });
    t.is(v2.agent_id, v1.agent_id);
    t.false(v2.created);
    t.is((await agents.lookup('acme', 'hello')).version, '2.0.0');
    const versions = await agents.versions('acme', v1.agent_id, alice);
    t.deepEqual(versions.versions.map((v) => [v.version, v.current]), [['2.0.0', true], ['1.0.0', false]]);
    t.is((await agents.getManifest('acme', v1.agent_id, '1.0.0')).manifest.spec.task.instruction, 'One.');
    t.is((await agents.getManifest('acme', v1.agent_id)).manifest.spec.task.instruction, 'Two.');
    await t.throwsAsync(agents.getManifest('acme', v1.agent_id, '9.9.9'), { message: /no version 9\.9\.9/ });
    t.is((await agents.list('acme', alice)).length, 1);
  });

  test.serial(`${kind}: tenant isolation: another tenant cannot list, lookup, get, update or delete`, async (t) => {
    const agents = await setup(t);
    const a = await agents.deploy({ ...alice, yaml: manifest('secret', '1.0.0') });
    t.deepEqual(await agents.list('globex', carol), []);
    await t.throwsAsync(agents.lookup('globex', 'secret', carol), { message: 'Agent not found' });
    await t.throwsAsync(agents.get('globex', a.agent_id, carol), { message: 'Agent not found' });
    await t.throwsAsync(agents.getManifest('globex', a.agent_id), { message: 'Agent not found' });
    await t.throwsAsync(agents.update('globex', a.agent_id, manifest('secret', '2.0.0'), carol), { message: 'Agent not found' });
    await t.throwsAsync(agents.remove('globex', a.agent_id, carol), { message: 'Agent not found' });
    // The same name in another tenant is another agent.
    const c = await agents.deploy({ ...carol, yaml: manifest('secret', '1.0.0') });
    t.not(c.agent_id, a.agent_id);
    t.is((await agents.lookup('acme', 'secret')).agent_id, a.agent_id);
    t.is((await agents.lookup('globex', 'secret')).agent_id, c.agent_id);
  });

  test.serial(`${kind}: global agents are visible to every tenant and deployed only by operators`, async (t) => {
    const agents = await setup(t);
    await t.throwsAsync(agents.deploy({ ...alice, yaml: manifest('judge', '1.0.0'), scope: 'global' }), { message: /operator/ });
    const g = await agents.deploy({ ...ops, yaml: manifest('judge', '1.0.0'), scope: 'global' });
    for (const who of [alice, carol]) {
      t.like(await agents.lookup(who.tenant, 'judge', who), { agent_id: g.agent_id, scope: 'global', tenant_id: 'orch-system' });
      t.deepEqual((await agents.list(who.tenant, who)).map((a) => a.name), ['judge']);
      t.is((await agents.manifestByName(who.tenant, 'judge')).metadata.name, 'judge');
    }
    await t.throwsAsync(agents.remove('acme', 'judge', alice), { message: /operator/ });
    await t.throwsAsync(agents.update('acme', 'judge', manifest('judge', '2.0.0'), alice), { message: /operator/ });
    // A tenant's own agent of the same name shadows the global one for that tenant only.
    const own = await agents.deploy({ ...alice, yaml: manifest('judge', '5.0.0') });
    t.is((await agents.lookup('acme', 'judge', alice)).agent_id, own.agent_id);
    t.deepEqual((await agents.list('acme', alice)).map((a) => a.agent_id), [own.agent_id]);
    t.is((await agents.lookup('globex', 'judge', carol)).agent_id, g.agent_id);
    t.like(await agents.remove('orch-system', 'judge', ops), { agent_id: g.agent_id, deleted: true });
    await t.throwsAsync(agents.lookup('globex', 'judge', carol), { message: 'Agent not found' });
  });

  test.serial(`${kind}: user-scoped agents are visible only to their owner`, async (t) => {
    const agents = await setup(t);
    const mine = await agents.deploy({ ...alice, yaml: manifest('private', '1.0.0'), scope: 'user' });
    t.like(await agents.lookup('acme', 'private', alice), { agent_id: mine.agent_id, scope: 'user', owner_subject: 'alice' });
    await t.throwsAsync(agents.lookup('acme', 'private', bob), { message: 'Agent not found' });
    t.deepEqual(await agents.list('acme', bob), []);
    await t.throwsAsync(agents.get('acme', mine.agent_id, bob), { message: 'Agent not found' });
    await t.throwsAsync(agents.remove('acme', mine.agent_id, bob), { message: 'Agent not found' });
    // Bob cannot take the name either.
    await t.throwsAsync(agents.deploy({ ...bob, yaml: manifest('private', '2.0.0') }), { message: /another user/ });
    // Alice adds a version without restating the scope; it stays user-scoped.
    await agents.deploy({ ...alice, yaml: manifest('private', '2.0.0') });
    t.is((await agents.lookup('acme', 'private', alice)).scope, 'user');
    // The execution engine (no viewer) acts for the tenant.
    t.is((await agents.getManifest('acme', mine.agent_id)).version, '2.0.0');
    await t.throwsAsync(agents.deploy({ ...alice, yaml: manifest('private', '3.0.0'), scope: 'tenant' }), { message: /scope user/ });
  });

  test.serial(`${kind}: update adds a version of an existing agent; delete one version or the whole agent`, async (t) => {
    const agents = await setup(t);
    await t.throwsAsync(agents.update('acme', 'hello', manifest('hello', '1.0.0'), alice), { message: 'Agent not found' });
    const a = await agents.deploy({ ...alice, yaml: manifest('hello', '1.0.0') });
    t.like(await agents.update('acme', 'hello', manifest('hello', '1.1.0'), alice), { agent_id: a.agent_id, version: '1.1.0' });
    await t.throwsAsync(agents.update('acme', a.agent_id, manifest('hello', '1.1.0', 'Again.'), alice), { message: /already exists/ });
    t.like(await agents.update('acme', a.agent_id, manifest('hello', '1.1.0', 'Again.'), { ...alice, force: true }), { replaced: true });
    const renamed = await t.throwsAsync(agents.update('acme', a.agent_id, manifest('other', '9.0.0'), alice), { instanceOf: AgentManifestInvalid });
    t.deepEqual(renamed?.errors.map((e) => e.field), ['metadata.name']);
    t.like(await agents.remove('acme', 'hello', alice, '1.1.0'), { deleted: true, version: '1.1.0' });
    t.is((await agents.lookup('acme', 'hello')).version, '1.0.0');
    await t.throwsAsync(agents.remove('acme', 'hello', alice, '7.0.0'), { message: /no version/ });
    await agents.remove('acme', a.agent_id, alice);
    await t.throwsAsync(agents.lookup('acme', 'hello'), { message: 'Agent not found' });
    t.deepEqual(await agents.list('acme', alice), []);
  });

  test.serial(`${kind}: concurrent first deploys of one name make one agent`, async (t) => {
    const agents = await setup(t);
    const results = await Promise.allSettled(['1.0.0', '2.0.0', '3.0.0', '4.0.0'].map((v) => agents.deploy({ ...alice, yaml: manifest('race', v) })));
    const ok = results.filter((r): r is PromiseFulfilledResult<Awaited<ReturnType<AgentService['deploy']>>> => r.status === 'fulfilled');
    t.is(ok.length, 4, JSON.stringify(results.filter((r) => r.status === 'rejected')));
    t.is(new Set(ok.map((r) => r.value.agent_id)).size, 1);
    t.is(ok.filter((r) => r.value.created).length, 1);
    t.is((await agents.versions('acme', 'race', alice)).versions.length, 4);
  });
}

suite('pglite', freshPglite('orch-agents-'));
suite('pg', freshPg);
