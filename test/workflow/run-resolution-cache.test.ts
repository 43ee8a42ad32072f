// Run starts resolve a workflow name from memory (registry resolveForRun) and the start's INSERT checks the
// fingerprint of what the name resolved from, so on real PostgreSQL: a second start of a name reads no registry row;
// a deploy, forced redeploy, user-scope shadow, delete or promote made by ANOTHER node (its own registry service, so
// this node's memory is not told) is seen by this node's very next start; and a stale stimulus start writes nothing
// before it is retried (one key claim, one stimulus, one run).
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { StartWriter, type StartWrite } from '../../src/workflow/engine/starts.ts';
import { getWorkflowExecution } from '../../src/workflow/engine/repo.ts';
import { WorkflowDefinitionService } from '../../src/workflow/registry/service.ts';
import { manifest, startEngine, TENANT } from './engine-harness.ts';

const wf = (version: string, note: string): string =>
  manifest(
    'cached',
    'a',
    `    a:
      kind: System
      command: 'update_blackboard {"note": "${note}"}'
      transitions: []
`,
  ).replace('version: 1.0.0', `version: ${version}`);

/** The Db with a count of the statements that read the registry table. */
function counting(db: Db): { db: Db; registryReads: () => number } {
  let n = 0;
  const proxy = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === 'query') {
        return (sql: string, params?: unknown[]) => {
          if (/\bFROM workflows\b/.test(sql)) n++;
          return target.query(sql, params as never);
        };
      }
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { db: proxy, registryReads: () => n };
}

test('resolveForRun: the second start of a name reads no registry row; this node\'s own deploy drops it at once', async (t) => {
  const h = await startEngine(t);
  await h.deploy(wf('1.0.0', 'one'));
  const { db, registryReads } = counting(h.db);
  const defs = new WorkflowDefinitionService(db, silentLogger());
  const first = await defs.resolveForRun(TENANT, 'cached');
  t.is(first?.definition.version, '1.0.0');
  t.is(typeof first?.fingerprint, 'string');
  const reads = registryReads();
  t.true(reads > 0);
  const second = await defs.resolveForRun(TENANT, 'cached');
  t.is(registryReads(), reads, 'served from memory');
  t.is(second?.fingerprint, first?.fingerprint);
  t.is(second?.definition, first?.definition);
  // A fresh read reads again and finds the same fingerprint.
  t.is((await defs.resolveForRun(TENANT, 'cached', undefined, undefined, { fresh: true }))?.fingerprint, first?.fingerprint);
  t.true(registryReads() > reads);
  // Its own deploy forgets the name: the next resolution reads and sees the new version.
  await defs.deploy({ tenant: TENANT, subject: 'alice', yaml: wf('1.1.0', 'one-one') });
  const third = await defs.resolveForRun(TENANT, 'cached');
  t.is(third?.definition.version, '1.1.0');
  t.not(third?.fingerprint, first?.fingerprint);
  // A name that is not deployed is not remembered as missing.
  t.is(await defs.resolveForRun(TENANT, 'nope'), undefined);
  await defs.deploy({ tenant: TENANT, subject: 'alice', yaml: wf('1.0.0', 'x').replace('name: cached', 'name: nope') });
  t.is((await defs.resolveForRun(TENANT, 'nope'))?.definition.name, 'nope');
});

test('a registry change made on another node is seen by the next start here (deploy, force, user shadow, promote, delete)', async (t) => {
  const a = await startEngine(t, { nodeId: 'node-a' });
  // The other node: its own registry service on the same database (node A's memory is never told).
  const other = new WorkflowDefinitionService(a.db, silentLogger());
  const deploy = (yaml: string, o: { force?: boolean; subject?: string; scope?: 'user' | 'tenant' } = {}) =>
    other.deploy({ tenant: TENANT, subject: o.subject ?? 'alice', yaml, force: o.force ?? false, ...(o.scope ? { scope: o.scope } : {}) });
  const runOnA = async (userId?: string): Promise<{ version: string; note: unknown }> => {
    const { execution_id } = await a.cap.runs.run({ tenant: TENANT, workflow: 'cached', ...(userId ? { userId } : {}) });
    const row = await a.waitFor(execution_id);
    t.is(row.status, 'completed', row.error ?? '');
    return { version: row.workflow_version, note: row.blackboard.note };
  };

  await deploy(wf('1.0.0', 'one'));
  t.deepEqual(await runOnA(), { version: '1.0.0', note: 'one' });
  t.deepEqual(await runOnA(), { version: '1.0.0', note: 'one' }, 'served from memory, still right');

  await deploy(wf('2.0.0', 'two'));
  t.deepEqual(await runOnA(), { version: '2.0.0', note: 'two' }, 'a higher version deployed elsewhere');

  await deploy(wf('2.0.0', 'two-forced'), { force: true });
  t.deepEqual(await runOnA(), { version: '2.0.0', note: 'two-forced' }, 'a forced redeploy elsewhere');

  t.deepEqual(await runOnA('bob'), { version: '2.0.0', note: 'two-forced' });
  await deploy(wf('0.1.0', 'bobs'), { subject: 'bob', scope: 'user' });
  t.deepEqual(await runOnA('bob'), { version: '0.1.0', note: 'bobs' }, 'a user-scoped shadow for that user');
  t.deepEqual(await runOnA(), { version: '2.0.0', note: 'two-forced' }, 'not for the tenant');

  // Promote bob's version to the tenant scope: it collides with nothing (0.1.0) and becomes a tenant version.
  await other.promote(TENANT, 'cached', { subject: 'bob', roles: ['tenant-admin'] }, { target_scope: 'tenant', user_id: 'bob' });
  t.deepEqual(await runOnA('bob'), { version: '2.0.0', note: 'two-forced' }, 'after promote, bob resolves the tenant group');

  await other.remove(TENANT, 'cached', { subject: 'alice', roles: ['tenant-admin'] }, '2.0.0');
  t.deepEqual(await runOnA(), { version: '1.0.0', note: 'one' }, 'a deleted version elsewhere');

  await other.remove(TENANT, 'cached', { subject: 'alice', roles: ['tenant-admin'] });
  const err = await t.throwsAsync(a.cap.runs.run({ tenant: TENANT, workflow: 'cached' }));
  t.regex(err?.message ?? '', /not deployed/);
  t.is((await a.db.query<{ n: number }>("SELECT count(*)::int AS n FROM workflow_executions WHERE workflow_name = 'cached' AND status <> 'completed'")).rows[0]!.n, 0);
});

test('a stale stimulus start writes nothing; its retry claims the key once and starts the current version', async (t) => {
  const a = await startEngine(t, { nodeId: 'node-a' });
  const other = new WorkflowDefinitionService(a.db, silentLogger());
  await other.deploy({ tenant: TENANT, subject: 'alice', yaml: wf('1.0.0', 'one') });
  const deliver = (key: string) =>
    a.cap.runs.runStimulus!(
      { tenant: TENANT, workflow: 'cached', executionId: randomUUID() },
      { id: randomUUID(), source: 'hook', idempotencyKey: key, content: key, headers: {}, routedBy: 'route', ttlSeconds: 3600 },
    );
  const first = await deliver('k1');
  t.true('execution_id' in first);
  await other.deploy({ tenant: TENANT, subject: 'alice', yaml: wf('1.1.0', 'one-one') });
  const second = await deliver('k2');
  if (!('execution_id' in second)) return t.fail('k2 was a duplicate');
  t.is((await a.waitFor(second.execution_id)).workflow_version, '1.1.0');
  t.deepEqual(await deliver('k2'), { duplicate: true });
  const n = async (sql: string): Promise<number> => (await a.db.query<{ n: number }>(sql)).rows[0]!.n;
  t.is(await n("SELECT count(*)::int AS n FROM stimulus_keys WHERE idempotency_key = 'k2'"), 1);
  t.is(await n("SELECT count(*)::int AS n FROM stimuli WHERE idempotency_key = 'k2'"), 1);
  t.is(await n("SELECT count(*)::int AS n FROM workflow_executions WHERE workflow_name = 'cached'"), 2);
});

test('StartWriter: a guarded start whose fingerprint no longer matches writes nothing and answers stale', async (t) => {
  const a = await startEngine(t);
  await a.deploy(wf('1.0.0', 'one'));
  const r = await a.defs.resolveForRun(TENANT, 'cached');
  if (!r?.fingerprint) return t.fail('no fingerprint');
  const writer = new StartWriter(a.db);
  const start = (fingerprint: string, key: string): StartWrite => {
    const id = randomUUID();
    return {
      run: {
        id, tenantId: TENANT, workflowId: r.definition.id, workflowName: 'cached', workflowVersion: r.definition.version, manifest: r.definition.manifest,
        input: {}, blackboard: {}, context: {}, depth: 0, ancestry: [], ownerNode: 'elsewhere', leaseMs: 30_000,
      },
      events: [{ type: 'WorkflowExecutionStarted', key: 'started', payload: {} }],
      stimulus: { id: randomUUID(), source: 'hook', idempotencyKey: key, content: key, headers: {}, routedBy: 'route', ttlSeconds: 3600 },
      guard: { viewer: null, fingerprint },
    };
  };
  const [stale, fresh] = await Promise.all([writer.write(start('not-the-fingerprint', 's1')), writer.write(start(r.fingerprint, 's2'))]);
  t.deepEqual(stale, { stale: true });
  t.true('row' in fresh);
  const n = async (sql: string): Promise<number> => (await a.db.query<{ n: number }>(sql)).rows[0]!.n;
  t.is(await n("SELECT count(*)::int AS n FROM stimulus_keys WHERE idempotency_key = 's1'"), 0);
  t.is(await n("SELECT count(*)::int AS n FROM stimuli WHERE idempotency_key = 's1'"), 0);
  t.is(await n("SELECT count(*)::int AS n FROM stimuli WHERE idempotency_key = 's2'"), 1);
  if ('row' in fresh) t.truthy(await getWorkflowExecution(a.db, fresh.row.id));
});

test('StartWriter: starts of different workflows in one batch each store their own manifest', async (t) => {
  const a = await startEngine(t);
  await a.deploy(wf('1.0.0', 'one'));
  await a.deploy(wf('1.0.0', 'other').replace('name: cached', 'name: second').replace(/\ba\b/g, 'b'));
  const one = (await a.defs.resolveForRun(TENANT, 'cached'))!.definition;
  const two = (await a.defs.resolveForRun(TENANT, 'second'))!.definition;
  t.is(two.manifest.spec.initial_state, 'b');
  const writer = new StartWriter(a.db);
  const start = (d: typeof one): StartWrite => ({
    run: {
      id: randomUUID(), tenantId: TENANT, workflowId: d.id, workflowName: d.name, workflowVersion: d.version, manifest: d.manifest,
      input: {}, blackboard: {}, context: {}, depth: 0, ancestry: [], ownerNode: 'elsewhere', leaseMs: 30_000,
    },
    events: [],
  });
  const batch = [start(one), start(two), start(one), start(two)];
  const out = await Promise.all(batch.map((w) => writer.write(w)));
  t.true(out.every((o) => 'row' in o));
  t.is(writer.stats.statements, 1, 'one statement for the batch');
  for (const w of batch) {
    const row = await getWorkflowExecution(a.db, w.run.id);
    t.deepEqual(row?.manifest, w.run.manifest);
    t.is(row?.current_state, w.run.manifest.spec.initial_state);
  }
});
