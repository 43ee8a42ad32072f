// The private-server fixtures themselves: a kill resets the clients' connections, a start brings the same data
// back on the same port. Other resilience tests build on this.
import test from 'ava';
import pg from 'pg';
import { Redis } from 'ioredis';
import { startPrivatePostgres, startPrivateRedis } from '../support/private-services.ts';

test('a private PostgreSQL survives kill and start with its data; clients see the connection drop', async (t) => {
  const server = await startPrivatePostgres();
  t.teardown(() => server.cleanup());
  const url = await server.createDatabase();
  const client = new pg.Client({ connectionString: url });
  const errors: Error[] = [];
  client.on('error', (err) => errors.push(err));
  await client.connect();
  await client.query('CREATE TABLE t (v int)');
  await client.query('INSERT INTO t VALUES (7)');
  await server.kill();
  t.false(server.isRunning());
  await t.throwsAsync(client.query('SELECT 1'));
  await client.end().catch(() => undefined);
  await server.start();
  const again = new pg.Client({ connectionString: url });
  await again.connect();
  t.deepEqual((await again.query('SELECT v FROM t')).rows, [{ v: 7 }]);
  await again.end();
});

test('a private Redis answers, dies on kill and answers again on start', async (t) => {
  const server = await startPrivateRedis();
  t.teardown(() => server.cleanup());
  const r = new Redis(server.url, { maxRetriesPerRequest: 0, retryStrategy: () => 50 });
  r.on('error', () => undefined);
  t.teardown(() => r.disconnect());
  t.is(await r.ping(), 'PONG');
  await server.kill();
  await t.throwsAsync(r.ping());
  await server.start();
  const deadline = Date.now() + 30_000;
  let pong = '';
  while (Date.now() < deadline && pong !== 'PONG') pong = await r.ping().catch(() => '');
  t.is(pong, 'PONG');
});
