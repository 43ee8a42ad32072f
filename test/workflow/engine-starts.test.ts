// The group-commit StartWriter on real PostgreSQL: concurrent starts are written together (fewer statements than
// starts), each claimed for its node in the insert; a stimulus start takes its idempotency key, records the stimulus
// and the run in the same statement, and of two deliveries with one key exactly one writes anything (also when they
// arrive together); a start that the database refuses fails alone while the rest of its batch commits.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { StartWriter, type StartWrite } from '../../src/workflow/engine/starts.ts';
import { migratedPg, ONE_STATE_WORKFLOW, parsedManifest, wiredPg } from './engine-harness.ts';

test('batched starts: one run per idempotency key, stimulus and run written together, a refused start fails alone', async (t) => {
  const db = await migratedPg(t);
  const manifest = parsedManifest(ONE_STATE_WORKFLOW);
  const tenant = `t-${randomUUID()}`;
  const start = (key: string | null | undefined, workflowId: string = randomUUID()): StartWrite => {
    const id = randomUUID();
    return {
      run: { id, tenantId: tenant, workflowId, workflowName: 'w', workflowVersion: '1.0.0', manifest, input: { k: key }, blackboard: {}, context: {}, depth: 0, ancestry: [], ownerNode: 'node-a', leaseMs: 30_000 },
      events: [
        { type: 'WorkflowExecutionStarted', key: 'started', payload: {} },
        { type: 'WorkflowStateEntered', key: 'entered:a:1', state_name: 'a', iteration_number: 1, payload: {} },
      ],
      ...(key === null ? {} : { stimulus: { id: randomUUID(), source: 'hook', idempotencyKey: key, content: `c-${key}`, headers: {}, routedBy: 'route' as const, ttlSeconds: 3600 } }),
    };
  };
  const writer = new StartWriter(db, { maxInFlight: 2 });
  const keyed = Array.from({ length: 20 }, (_, i) => start(`k${i % 10}`));
  const unkeyed = [start(undefined), start(undefined)];
  const plain = [start(null), start(null), start(null)];
  const all = [...keyed, ...unkeyed, ...plain];
  const outcomes = await Promise.all(all.map((w) => writer.write(w)));
  t.true(writer.stats.statements < all.length, `${writer.stats.statements} statements for ${all.length} starts`);

  const won = outcomes.filter((o) => 'row' in o).length;
  t.is(won, 10 + 2 + 3);
  t.is(outcomes.filter((o) => 'duplicate' in o).length, 10);
  for (let k = 0; k < 10; k++) {
    const mine = keyed.map((w, i) => ({ w, o: outcomes[i]! })).filter(({ w }) => w.stimulus?.idempotencyKey === `k${k}`);
    t.is(mine.filter(({ o }) => 'row' in o).length, 1, `key k${k} started one run`);
  }
  for (const o of outcomes) {
    if (!('row' in o)) continue;
    t.like(o.row, { owner_node: 'node-a', epoch: 0, status: 'running', current_state: 'a', last_seq: 2, visits: { a: 1 } });
    t.true(o.row.lease_expires_at instanceof Date && o.row.lease_expires_at.getTime() > Date.now());
  }
  const count = async (sql: string): Promise<number> => (await db.query<{ n: number }>(sql, [tenant])).rows[0]!.n;
  t.is(await count('SELECT count(*)::int AS n FROM workflow_executions WHERE tenant_id = $1'), 15);
  t.is(await count("SELECT count(*)::int AS n FROM stimuli WHERE tenant_id = $1 AND status = 'routed'"), 12);
  t.is(await count('SELECT count(*)::int AS n FROM stimulus_keys WHERE tenant_id = $1'), 10);
  t.is(await count('SELECT count(*)::int AS n FROM workflow_events e JOIN workflow_executions w ON w.id = e.execution_id WHERE w.tenant_id = $1'), 30);
  // Every recorded stimulus names a run that exists, and every key names its recorded stimulus.
  t.is(await count('SELECT count(*)::int AS n FROM stimuli s JOIN workflow_executions w ON w.id = s.workflow_execution_id WHERE s.tenant_id = $1'), 12);
  t.is(await count('SELECT count(*)::int AS n FROM stimulus_keys k JOIN stimuli s ON s.id = k.stimulus_id WHERE k.tenant_id = $1'), 10);

  // A later delivery of a taken key writes nothing.
  const again = await writer.write(start('k3'));
  t.deepEqual(again, { duplicate: true });

  // A start the database refuses (a workflow id that is no UUID) fails alone; its batch-mates start.
  const good = [start('g1'), start(null)];
  const bad = start('g2', 'not-a-uuid');
  const results = await Promise.allSettled([...good, bad].map((w) => writer.write(w)));
  t.is(results[0]!.status, 'fulfilled');
  t.is(results[1]!.status, 'fulfilled');
  t.is(results[2]!.status, 'rejected');
  t.is(await count('SELECT count(*)::int AS n FROM workflow_executions WHERE tenant_id = $1'), 17);
  t.is(await count("SELECT count(*)::int AS n FROM stimulus_keys WHERE tenant_id = $1 AND idempotency_key = 'g2'"), 0);
});

test('a start sends its JSON once encoded, and input of any JSON type, blackboard, ancestry and stimulus read back as written', async (t) => {
  // Each JSON value used to travel inside an array literal: stringified, then escaped by pg (every quote and
  // backslash doubled) and parsed twice by the server, so a start's bytes on the wire grew by more than its JSON.
  const { db, wire } = await wiredPg(t);
  const manifest = parsedManifest(ONE_STATE_WORKFLOW);
  const odd = 'quote " backslash \\ tab \t unicode é ✓ {braces} [1,2] NULL';
  const start = (input: unknown, blackboard: Record<string, unknown> = {}, stimulus = false): StartWrite => {
    const id = randomUUID();
    return {
      run: { id, tenantId: 't', workflowId: randomUUID(), workflowName: 'w', workflowVersion: '1.0.0', manifest, input, intent: odd, blackboard, context: { odd }, depth: 1, ancestry: ['parent', odd], ownerNode: 'node-a', leaseMs: 30_000 },
      events: [{ type: 'WorkflowExecutionStarted', key: 'started', payload: { odd } }],
      ...(stimulus ? { stimulus: { id: randomUUID(), source: 'hook', idempotencyKey: `k-${id}`, content: odd, headers: { 'x-odd': odd }, routedBy: 'route' as const, confidence: 0.5, ttlSeconds: 60 } } : {}),
    };
  };
  const writer = new StartWriter(db, { maxInFlight: 1 });
  // Warm: the statement is prepared (its text sent) on the first call; measure the next ones.
  await writer.write(start({}));
  wire.reset();
  await writer.write(start({}));
  const small = wire.bytes();
  const big: Record<string, unknown> = {};
  for (let i = 0; i < 400; i++) big[`key_${i}`] = { text: `value "${i}"`, list: [i, `x${i}`] };
  wire.reset();
  await writer.write(start({}, big));
  const grown = wire.bytes() - small;
  const json = Buffer.byteLength(JSON.stringify(big));
  t.true(grown <= json * 1.02 + 64, `a ${json}-byte blackboard made the start ${grown} bytes larger`);

  const inputs: unknown[] = ['just a string', 42, [1, 'two', null], null, { odd }, true];
  const starts = inputs.map((input, i) => start(input, { i, odd }, i % 2 === 0));
  const outcomes = await Promise.all(starts.map((w) => writer.write(w)));
  t.true(outcomes.every((o) => 'row' in o));
  for (const [i, w] of starts.entries()) {
    const r = await db.query<{ input: unknown; intent: string; blackboard: unknown; context: unknown; ancestry: unknown; depth: number }>(
      'SELECT input, intent, blackboard, context, ancestry, depth FROM workflow_executions WHERE id = $1',
      [w.run.id],
    );
    // A null input is stored as {} (as the run row in memory has it).
    t.deepEqual(r.rows[0], { input: inputs[i] ?? {}, intent: odd, blackboard: { i, odd }, context: { odd }, ancestry: ['parent', odd], depth: 1 });
    const ev = await db.query<{ payload: unknown }>('SELECT payload FROM workflow_events WHERE execution_id = $1 AND seq = 1', [w.run.id]);
    t.deepEqual(ev.rows[0]?.payload, { odd });
    if (!w.stimulus) continue;
    const s = await db.query<{ content: string; headers: unknown; confidence: number }>('SELECT content, headers, confidence FROM stimuli WHERE id = $1', [w.stimulus.id]);
    t.deepEqual(s.rows[0], { content: odd, headers: { 'x-odd': odd }, confidence: 0.5 });
  }
});

test('starts that arrive a few per turn wait for the statement in flight and leave together, not a few to a statement', async (t) => {
  const db = await migratedPg(t);
  const manifest = parsedManifest(ONE_STATE_WORKFLOW);
  const start = (): StartWrite => ({
    run: { id: randomUUID(), tenantId: 't', workflowId: randomUUID(), workflowName: 'w', workflowVersion: '1.0.0', manifest, input: {}, blackboard: {}, context: {}, depth: 0, ancestry: [], ownerNode: 'node-a', leaseMs: 30_000 },
    events: [{ type: 'WorkflowExecutionStarted', key: 'started', payload: {} }],
  });
  // The first statement is held until every cohort has arrived: on a loaded machine the process can be descheduled
  // between two turns for longer than a commit takes, and the statement in flight would then be gone before the next
  // cohort came (6 statements in a run at load ~9), which says nothing about the writer.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let first = true;
  const gated = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === 'query') {
        return async (...args: Parameters<typeof db.query>) => {
          if (first) {
            first = false;
            await held;
          }
          return target.query(...args);
        };
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  // Four statements may be in flight (the default): the old writer sent each cohort while a connection was free.
  const writer = new StartWriter(gated);
  const COHORTS = 8;
  const PER = 3;
  const outcomes: Promise<unknown>[] = [];
  // The cohorts arrive in successive turns of the event loop, as HTTP requests on separate connections do.
  for (let c = 0; c < COHORTS; c++) {
    for (let i = 0; i < PER; i++) outcomes.push(writer.write(start()));
    await new Promise((r) => setImmediate(r));
  }
  release();
  const all = await Promise.all(outcomes);
  t.is(all.filter((o) => typeof o === 'object' && o !== null && 'row' in o).length, COHORTS * PER);
  t.is(writer.stats.starts, COHORTS * PER);
  // The first cohort goes alone (nothing in flight); the rest wait for its commit and go as one statement.
  t.true(writer.stats.statements <= 3, `${writer.stats.statements} statements for ${COHORTS} cohorts of ${PER}`);
});
