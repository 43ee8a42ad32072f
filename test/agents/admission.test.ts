// The execution start queue (src/agents/execution/admission.ts), in process: the per-tenant (429) and node-wide (503)
// bounds with Retry-After details, round-robin slots over tenants, a slot given back frees the next waiter, and an
// abort while waiting leaves the queue.
import test from 'ava';
import { StartAdmission } from '../../src/agents/execution/admission.ts';
import { isOrchError } from '../../src/errors/catalog.ts';

const never = new AbortController().signal;

test('a tenant over its share is refused 429, a full node 503, each with retry_after_seconds; nothing is counted for a refusal', (t) => {
  const a = new StartAdmission({ max_concurrent_starts: 1, max_queued: 3, max_queued_per_tenant: 2, retry_after_seconds: 7 });
  a.reserve('t1', 'e1');
  a.reserve('t1', 'e2');
  const tenantFull = t.throws(() => a.reserve('t1', 'e3'));
  t.true(isOrchError(tenantFull));
  if (isOrchError(tenantFull)) {
    t.is(tenantFull.spec.http, 429);
    t.regex(tenantFull.message, /too many executions of this tenant waiting to start/);
    t.is((tenantFull.details as { retry_after_seconds: number }).retry_after_seconds, 7);
  }
  a.reserve('t2', 'e4');
  const nodeFull = t.throws(() => a.reserve('t3', 'e5'));
  if (isOrchError(nodeFull)) {
    t.is(nodeFull.spec.http, 503);
    t.regex(nodeFull.message, /start queue is full \(3\)/);
  } else t.fail('not an OrchError');
  t.deepEqual(a.load(), { queued: 3, starting: 0, max_queued: 3, max_concurrent_starts: 1, saturated: true });
  a.release('e1');
  t.is(a.load().saturated, false);
  t.notThrows(() => a.reserve('t3', 'e5'));
  // Reserving an id twice takes one place.
  a.reserve('t3', 'e5');
  t.is(a.load().queued, 3);
});

test('slots go round-robin over tenants: one tenant\'s backlog does not hold another tenant\'s start', async (t) => {
  const a = new StartAdmission({ max_concurrent_starts: 1, max_queued: 100, max_queued_per_tenant: 100, retry_after_seconds: 1 });
  const order: string[] = [];
  const waits: Promise<void>[] = [];
  // The one slot is taken while both tenants' starts arrive: the busy tenant's five, then the quiet tenant's one.
  a.reserve('other', 'x');
  await a.acquire('other', 'x', never);
  order.push('x');
  for (let i = 0; i < 5; i++) {
    a.reserve('busy', `b${i}`);
    waits.push(a.acquire('busy', `b${i}`, never).then(() => void order.push(`b${i}`)));
  }
  a.reserve('quiet', 'q0');
  waits.push(a.acquire('quiet', 'q0', never).then(() => void order.push('q0')));
  // One slot: grant, let the grantee finish its start, release, repeat.
  for (let i = 0; i < 7; i++) {
    await new Promise((r) => setImmediate(r));
    const last = order[order.length - 1]!;
    t.is(a.load().starting, 1);
    a.release(last);
  }
  await Promise.all(waits);
  t.deepEqual(order, ['x', 'b0', 'q0', 'b1', 'b2', 'b3', 'b4'], 'the quiet tenant went second, not sixth');
  t.deepEqual(a.load(), { queued: 0, starting: 0, max_queued: 100, max_concurrent_starts: 1, saturated: false });
});

test('an abort while waiting leaves the queue; a recovered execution (never reserved) queues without a reservation', async (t) => {
  const a = new StartAdmission({ max_concurrent_starts: 1, max_queued: 2, max_queued_per_tenant: 2, retry_after_seconds: 1 });
  a.reserve('t', 'first');
  await a.acquire('t', 'first', never);
  a.reserve('t', 'second');
  const ac = new AbortController();
  const waiting = a.acquire('t', 'second', ac.signal);
  ac.abort(new Error('cancelled'));
  await t.throwsAsync(waiting, { message: 'cancelled' });
  t.is(a.load().queued, 1);
  // Recovered from its row: joins the queue here and is granted once the slot is free.
  let granted = false;
  const recovered = a.acquire('t', 'recovered', never).then(() => void (granted = true));
  await new Promise((r) => setImmediate(r));
  t.false(granted, 'the slot is still held');
  a.release('first');
  await recovered;
  t.true(granted);
  a.release('recovered');
  t.is(a.load().queued, 0);
});
