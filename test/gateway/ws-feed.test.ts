// The live feed /v1/ws on real in-process nodes over PostgreSQL: authentication by header or first message, tenant
// scoping, entity streams that resume exactly (nothing missed, nothing twice) across several disconnects, list
// streams with snapshot + numbered upserts that resume exactly on the node that numbered them and reset elsewhere.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { createTestDatabase } from '../support/pg.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';
import { FeedClient, refiningAgent, seqsOf, startTestNode, TERMINAL_EXECUTION, type Defer, type FeedMessage, type TestNode } from './ws-support.ts';
import { CLOSE_UNAUTHENTICATED } from '../../src/gateway/http/ws-feed.ts';
import { readExecutionEvents } from '../../src/agents/execution/events.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
const defer: Defer = (fn) => void cleanups.push(fn);
let n: TestNode;

test.before(async () => {
  const db = await createTestDatabase({ migrated: true });
  defer(() => db.drop());
  // Slow answers that never validate: a long event stream that trickles while clients come and go.
  const llm = await startScriptedLlm(() => ({ content: 'not json' }), { delayMs: 120 });
  defer(() => llm.close());
  n = await startTestNode(defer, { databaseUrl: db.url, llmUrl: llm.url });
});

test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

async function startExecution(tenantToken: string, name: string, iterations: number): Promise<string> {
  const dep = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: refiningAgent(name, iterations) }, tenantToken);
  if (dep.status !== 201) throw new Error(JSON.stringify(dep.body));
  const ex = await n.api<{ execution_id: string }>('POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'go' }, tenantToken);
  if (ex.status !== 200 && ex.status !== 201) throw new Error(JSON.stringify(ex.body));
  return ex.body.execution_id;
}

test('auth: header or first message; a bad token or no token closes with 4401', async (t) => {
  const bad = new FeedClient(n.ws);
  await bad.opened;
  bad.send({ token: 'nope' });
  t.is((await bad.closed).code, CLOSE_UNAUTHENTICATED);

  const silent = new FeedClient(n.ws);
  await silent.opened;
  silent.send({ subscribe: 'executions' });
  t.is((await silent.closed).code, CLOSE_UNAUTHENTICATED, 'a subscription before the token');

  const first = new FeedClient(n.ws);
  await first.opened;
  first.send({ token: await n.token('t-auth') });
  const auth = await first.until((c) => c.messages.find((m) => 'authenticated' in m));
  t.like(auth, { authenticated: { tenant_id: 't-auth' } });
  first.send({ subscribe: 'executions' });
  const snap = await first.until((c) => c.of('executions').find((m) => 'snapshot' in m));
  t.deepEqual(snap.snapshot, []);
  first.kill();

  const headerRes = await fetch(`${n.http}/v1/executions`, { headers: { authorization: 'Bearer nope' } });
  t.is(headerRes.status, 401, 'the header path is the ordinary bearer check');
});

test('an entity stream resumes exactly across three disconnects, and matches the database', async (t) => {
  const token = await n.token('t-resume');
  const id = await startExecution(token, `resumer-${randomUUID().slice(0, 6)}`, 6);
  const stream = `execution:${id}`;
  const seen: FeedMessage[] = [];
  let last: number | undefined;
  for (let round = 0; ; round++) {
    const c = new FeedClient(n.ws, { token });
    await c.opened;
    c.send(last === undefined ? { subscribe: stream } : { subscribe: stream, last_seq: last });
    if (round < 3) {
      // Read a few events, then vanish without a close frame; the execution goes on meanwhile.
      const target = (last ?? 0) + 3;
      await c.until((cl) => (seqsOf(cl.messages, stream).at(-1) ?? 0) >= target, 30_000, `seq ${target}`);
      c.kill();
      seen.push(...c.of(stream).filter((m) => typeof m.seq === 'number'));
      last = seen.at(-1)!.seq!;
      await new Promise((r) => setTimeout(r, 300));
      continue;
    }
    await c.until((cl) => cl.of(stream).some(TERMINAL_EXECUTION), 60_000, 'terminal event');
    seen.push(...c.of(stream).filter((m) => typeof m.seq === 'number'));
    c.kill();
    break;
  }
  const seqs = seen.map((m) => m.seq!);
  const stored = await readExecutionEvents(n.node.db, id);
  t.deepEqual(seqs, stored.map((e) => e.seq), 'every stored event once, in order');
  t.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1));
  t.deepEqual(
    seen.map((m) => Object.keys(m).find((k) => k !== 'stream' && k !== 'seq')),
    stored.map((e) => e.type),
  );
  t.true(seqs.length >= 15, `a long stream (${seqs.length} events)`);
});

test('list streams: snapshot then numbered upserts; exact resume on the same feed, reset on an unknown one; tenants never mix', async (t) => {
  const token = await n.token('t-list');
  const other = await n.token('t-other');
  // A control client that stays connected throughout, and one that drops and resumes.
  const control = new FeedClient(n.ws, { token });
  const flaky = new FeedClient(n.ws, { token });
  const stranger = new FeedClient(n.ws, { token: other });
  await Promise.all([control.opened, flaky.opened, stranger.opened]);
  for (const c of [control, flaky, stranger]) c.send({ subscribe: 'executions' });
  const snaps = await Promise.all([control, flaky, stranger].map((c) => c.until((cl) => cl.of('executions').find((m) => 'snapshot' in m))));
  const feed = snaps[0]!.feed as string;
  t.truthy(feed);

  const id = await startExecution(token, `lister-${randomUUID().slice(0, 6)}`, 3);
  await flaky.until((c) => c.of('executions').some((m) => (m.upsert as { execution_id?: string } | undefined)?.execution_id === id));
  flaky.kill();
  const before = flaky.of('executions');
  const lastSeq = before.at(-1)!.seq!;
  // Misses the rest of the run while away.
  await control.until((c) => c.of('executions').some((m) => { const u = m.upsert as { execution_id?: string; status?: string } | undefined; return u?.execution_id === id && (u.status === 'failed' || u.status === 'completed'); }), 60_000, 'terminal upsert');

  const back = new FeedClient(n.ws, { token });
  await back.opened;
  back.send({ subscribe: 'executions', feed, last_seq: lastSeq });
  const resumed = await back.until((c) => c.messages.find((m) => m.subscribed === 'executions'));
  t.like(resumed, { resumed: true, seq: lastSeq, feed });
  const controlTail = control.of('executions').filter((m) => m.seq! > snaps[1]!.seq!);
  await back.until((c) => (c.of('executions').at(-1)?.seq ?? 0) >= controlTail.at(-1)!.seq!);
  const flakyAll = [...before.filter((m) => !('snapshot' in m)), ...back.of('executions')];
  t.deepEqual(flakyAll.map((m) => m.seq), controlTail.map((m) => m.seq), 'the same numbers, none missed, none twice');
  t.deepEqual(flakyAll, controlTail, 'the same messages');
  const final = controlTail.at(-1)!.upsert as { status: string; iteration: number; tenant_id: string };
  t.is(final.status, 'failed', 'never valid JSON: fails after max_iterations');
  t.is(final.iteration, 3);
  t.is(final.tenant_id, 't-list');

  // A resume point this node did not issue: a fresh snapshot marked reset, holding the finished execution.
  const elsewhere = new FeedClient(n.ws, { token });
  await elsewhere.opened;
  elsewhere.send({ subscribe: 'executions', feed: randomUUID(), last_seq: 5 });
  const reset = await elsewhere.until((c) => c.of('executions').find((m) => 'snapshot' in m));
  t.true(reset.reset);
  t.deepEqual((reset.snapshot as { execution_id: string }[]).map((r) => r.execution_id), [id]);

  // The other tenant saw none of it, and cannot follow the execution.
  t.deepEqual(stranger.of('executions').filter((m) => !('snapshot' in m)), []);
  stranger.send({ subscribe: `execution:${id}` });
  const denied = await stranger.until((c) => c.messages.find((m) => m.subscribe === `execution:${id}`));
  t.regex(String(denied.error), /not found/i);
  for (const c of [control, back, stranger, elsewhere]) c.kill();
});

test('bad subscriptions get an error message, not a closed socket', async (t) => {
  const c = new FeedClient(n.ws, { token: await n.token('t-bad') });
  await c.opened;
  c.send({ subscribe: 'everything' });
  c.send({ subscribe: 'executions', last_seq: -1 });
  c.socket.send('not json');
  await c.until((cl) => (cl.messages.filter((m) => 'error' in m).length >= 3 ? true : undefined));
  const errors = c.messages.filter((m) => 'error' in m).map((m) => String(m.error));
  t.true(errors.some((e) => /unknown subscription everything/.test(e)));
  t.true(errors.some((e) => /last_seq/.test(e)));
  t.true(errors.some((e) => /JSON/.test(e)));
  c.kill();
});
