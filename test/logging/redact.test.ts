// Secrets never reach a log line: the node logger censors secret-named fields at the top of a log object and one
// or two levels down, written to a real file and read back.
import test from 'ava';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../src/logging/logger.ts';

test('token, password, api_key, secret and authorization are censored at every depth a log call uses', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-redact-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'log.jsonl');
  const log = createLogger({ level: 'info', destination: file });
  log.info({ token: 'TOP-TOKEN', api_key: 'TOP-KEY' }, 'top level');
  log.child({ request: 'r1' }).info({ provider: { api_key: 'NESTED-KEY', name: 'openai' }, password: 'PW' }, 'one down');
  log.info({ config: { llm: { secret: 'DEEP-SECRET', token: 'DEEP-TOKEN' } }, headers: { authorization: 'Bearer HDR' } }, 'two down');
  log.info({ token_count: 12, keep: 'visible' }, 'not a secret');
  await new Promise<void>((resolve) => log.flush(() => resolve()));
  const text = await readFile(file, 'utf8');
  for (const secret of ['TOP-TOKEN', 'TOP-KEY', 'NESTED-KEY', 'PW', 'DEEP-SECRET', 'DEEP-TOKEN', 'Bearer HDR']) t.false(text.includes(secret), `${secret} leaked`);
  const lines = text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);
  t.is(lines.length, 4);
  t.is(lines[0]?.token, '[redacted]');
  t.is(lines[1]?.provider.name, 'openai', 'other fields stay');
  t.is(lines[2]?.config.llm.secret, '[redacted]');
  t.is(lines[3]?.token_count, 12);
  t.is(lines[3]?.keep, 'visible');
});

test('an error log line carries no request data: SQL parameters, bodies and headers of an error are redacted', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-redact-err-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'log.jsonl');
  const log = createLogger({ level: 'info', destination: file });
  // What a PGlite error looked like in the report: the statement's parameters held a webhook's body and headers.
  const dbError = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), {
    code: '22021',
    query: 'INSERT INTO stimuli (content, headers) VALUES ($1, $2)',
    params: ['{"title":"WEBHOOK-BODY"}', '{"x-hub":"WEBHOOK-HEADER"}'],
    queryOptions: { rowMode: 'object' },
  });
  const wrapped = new Error('stimulus failed', { cause: Object.assign(new Error('inner'), { body: 'INNER-BODY', headers: { cookie: 'INNER-COOKIE' } }) });
  log.error({ err: dbError }, 'unhandled error');
  log.error({ err: wrapped }, 'request failed');
  await new Promise<void>((resolve) => log.flush(() => resolve()));
  const text = await readFile(file, 'utf8');
  for (const leaked of ['WEBHOOK-BODY', 'WEBHOOK-HEADER', 'INNER-BODY', 'INNER-COOKIE']) t.false(text.includes(leaked), `${leaked} leaked`);
  const [first] = text.trim().split('\n').map((l) => JSON.parse(l) as { err: Record<string, unknown> });
  t.is(first?.err.message, 'invalid byte sequence for encoding "UTF8": 0x00', 'the error itself stays');
  t.is(first?.err.code, '22021');
  t.is(first?.err.params, '[redacted]');
});
