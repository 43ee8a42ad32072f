// The transaction retry helper on its own: what it retries, how often, and what it gives up with.
import test from 'ava';
import { RetryableError } from '../../src/errors/catalog.ts';
import { isSerializationFailure, SerializationConflict, withTxRetry } from '../../src/storage/retry.ts';

const conflict = (): Error => Object.assign(new Error('restart transaction'), { code: '40001' });

test('retries 40001 until it succeeds, passing the attempt number', async (t) => {
  const seen: number[] = [];
  const value = await withTxRetry(async (n) => {
    seen.push(n);
    if (n < 3) throw conflict();
    return 'ok';
  });
  t.is(value, 'ok');
  t.deepEqual(seen, [1, 2, 3]);
});

test('a SerializationConflict is retried like 40001', async (t) => {
  t.true(isSerializationFailure(new SerializationConflict('dup')));
  let n = 0;
  await withTxRetry(async () => {
    if (++n === 1) throw new SerializationConflict('dup');
  });
  t.is(n, 2);
});

test('other errors are not retried', async (t) => {
  let n = 0;
  const boom = Object.assign(new Error('boom'), { code: '23505' });
  t.is(await t.throwsAsync(withTxRetry(async () => { n++; throw boom; })), boom);
  t.is(n, 1);
  t.false(isSerializationFailure(null));
  t.false(isSerializationFailure('40001'));
});

test('gives up after maxAttempts with a RetryableError carrying the last conflict', async (t) => {
  let n = 0;
  const started = Date.now();
  const err = await t.throwsAsync(
    withTxRetry(async () => { n++; throw conflict(); }, { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5 }),
  );
  t.is(n, 4);
  t.true(err instanceof RetryableError);
  t.is((err!.cause as { code: string }).code, '40001');
  t.false(isSerializationFailure(err), 'an outer retry loop does not retry an exhausted inner one');
  // Four attempts with at most 5 ms of backoff each; the bound only leaves room for a loaded machine.
  t.true(Date.now() - started < 10_000);
});
