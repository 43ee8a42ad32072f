// The transaction retry helper on its own: what it retries, how often, and what it gives up with.
import test from 'ava';
import { RetryableError } from '../../src/errors/catalog.ts';
import type { Db, QueryResult } from '../../src/storage/db.ts';
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

test('a standalone statement that fails with 40001 is run again (it was not applied); other errors are not', async (t) => {
  const { retryingStatements } = await import('../../src/storage/statement-retry.ts');
  let calls = 0;
  let answer = async (): Promise<QueryResult> => {
    if (++calls < 3) throw conflict();
    return { rows: [{ ok: 1 }], rowCount: 1 };
  };
  const inner = {
    kind: 'pg',
    query: () => answer(),
    tx: async () => undefined,
    ping: async () => true,
    close: async () => undefined,
  } as unknown as Db;
  const db = retryingStatements(inner, { baseDelayMs: 1 });
  t.deepEqual((await db.query('SELECT 1')).rows, [{ ok: 1 }]);
  t.is(calls, 3);
  const boom = Object.assign(new Error('boom'), { code: '23505' });
  answer = async () => {
    calls++;
    throw boom;
  };
  calls = 0;
  t.is(await t.throwsAsync(db.query('INSERT')), boom);
  t.is(calls, 1);
});
