// The EventBus suite on real Redis, publisher and subscriber on separate buses (as two nodes would be), with
// history in real PostgreSQL.
import test from 'ava';
import { Redis } from 'ioredis';
import type { BusEvent } from '../../src/bus/bus.ts';
import { openBus } from '../../src/bus/open.ts';
import { RedisBus } from '../../src/bus/redis.ts';
import { Errors, OrchError } from '../../src/errors/catalog.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg } from '../../src/storage/pg.ts';
import { createTestDatabase } from '../support/pg.ts';
import { randomChannelPrefix, redisUrl } from '../support/redis.ts';
import { busConformance } from './bus-conformance.ts';

busConformance({
  kind: 'redis',
  open: async () => {
    const database = await createTestDatabase({ migrated: true });
    const db = await openPg(database.url);
    await migrate(db);
    const channelPrefix = randomChannelPrefix('bus');
    const pub = await openBus({ url: redisUrl(), channelPrefix }, silentLogger());
    const sub = await openBus({ url: redisUrl(), channelPrefix }, silentLogger());
    return {
      pub,
      sub,
      db,
      close: async () => {
        await pub.close();
        await sub.close();
        await db.close();
        await database.drop();
      },
    };
  },
});

test('redis: events travel as JSON on <prefix><stream>', async (t) => {
  const channelPrefix = randomChannelPrefix('wire');
  const bus = await RedisBus.open(redisUrl(), { channelPrefix });
  const raw = new Redis(redisUrl());
  t.teardown(async () => {
    await bus.close();
    raw.disconnect();
  });
  const got: string[] = [];
  raw.on('message', (channel: string, message: string) => got.push(`${channel} ${message}`));
  await raw.subscribe(`${channelPrefix}s1`);
  const event: BusEvent = { stream: 's1', seq: 1, type: 't', payload: { a: 1 }, at: '2024-01-01T00:00:00.000Z' };
  await bus.publish(event);
  const deadline = Date.now() + 30_000;
  while (got.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  t.deepEqual(got, [`${channelPrefix}s1 ${JSON.stringify(event)}`]);
});

test('redis: messages that are not events are dropped, later events still arrive', async (t) => {
  const channelPrefix = randomChannelPrefix('junk');
  const bus = await RedisBus.open(redisUrl(), { channelPrefix });
  const raw = new Redis(redisUrl());
  t.teardown(async () => {
    await bus.close();
    raw.disconnect();
  });
  const seen: number[] = [];
  await bus.subscribe('s', (e) => seen.push(e.seq));
  await raw.publish(`${channelPrefix}s`, 'not json');
  await raw.publish(`${channelPrefix}s`, JSON.stringify({ hello: 'world' }));
  await bus.publish({ stream: 's', seq: 1, type: 't', payload: null, at: new Date().toISOString() });
  const deadline = Date.now() + 30_000;
  while (seen.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  t.deepEqual(seen, [1]);
});

test('redis: an unreachable server fails openBus with UNAVAILABLE', async (t) => {
  const err = await t.throwsAsync(openBus({ url: 'redis://127.0.0.1:1' }, silentLogger()));
  t.true(err instanceof OrchError && err.spec === Errors.UNAVAILABLE, String(err));
});
