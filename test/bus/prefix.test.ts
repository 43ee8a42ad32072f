// subscribePrefix on both buses: every live event whose stream starts with the prefix, from another bus instance
// for Redis (as another node), none of the others; closing stops delivery; a glob character is refused.
import test from 'ava';
import type { BusEvent, EventBus } from '../../src/bus/bus.ts';
import { MemoryBus } from '../../src/bus/memory.ts';
import { openBus } from '../../src/bus/open.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { randomChannelPrefix, redisUrl } from '../support/redis.ts';

const ev = (stream: string, seq: number): BusEvent => ({ stream, seq, type: 't', payload: { n: seq }, at: new Date().toISOString() });

async function scenario(t: import('ava').ExecutionContext, pub: EventBus, sub: EventBus): Promise<void> {
  const got: string[] = [];
  const s = await sub.subscribePrefix('execution:', (e) => got.push(`${e.stream}#${e.seq}`));
  await pub.publish(ev('execution:a', 1));
  await pub.publish(ev('workflow:a', 1));
  await pub.publish(ev('execution:b', 7));
  await pub.publish(ev('executions', 1));
  const deadline = Date.now() + 30_000;
  while (got.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 100));
  t.deepEqual(got, ['execution:a#1', 'execution:b#7']);
  await s.close();
  await pub.publish(ev('execution:c', 1));
  await new Promise((r) => setTimeout(r, 150));
  t.is(got.length, 2, 'nothing after close');
}

test('memory bus: prefix subscriptions', async (t) => {
  const bus = new MemoryBus();
  await scenario(t, bus, bus);
  await bus.close();
});

test('redis bus: prefix subscriptions across two bus instances', async (t) => {
  const channelPrefix = randomChannelPrefix('prefix');
  const pub = await openBus({ url: redisUrl(), channelPrefix }, silentLogger());
  const sub = await openBus({ url: redisUrl(), channelPrefix }, silentLogger());
  try {
    await scenario(t, pub, sub);
    await t.throwsAsync(sub.subscribePrefix('execution:*', () => undefined), { message: /invalid stream prefix/ });
  } finally {
    await pub.close();
    await sub.close();
  }
});
