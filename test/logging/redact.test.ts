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
