// ioredis tracing (issue 19): every Redis connection orch opens (the bus, rate limits, SEAL replay) is tracked by
// trackRedis, which wraps its commands in `redis.<COMMAND>` client spans under the active span. Against the real
// Redis: a publish made inside a span shows up as its child with the command name and the connection's name (and
// no argument: the payload never reaches the span); a command outside any span makes none; a command Redis refuses
// marks its span failed; after close the client is unwrapped.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Redis } from 'ioredis';
import { RedisBus } from '../../src/bus/redis.ts';
import { trackRedis } from '../../src/observability/clients.ts';
import { startTelemetry } from '../../src/observability/setup.ts';
import { inSpan } from '../../src/observability/tracing.ts';
import { randomChannelPrefix, redisUrl } from '../support/redis.ts';

const exporter = new InMemorySpanExporter();
const telemetry = startTelemetry({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
test.after.always(() => telemetry.shutdown());

test.serial('a bus publish under a span is a redis.PUBLISH child span; outside any span there is none', async (t) => {
  const bus = await RedisBus.open(redisUrl(), { channelPrefix: randomChannelPrefix('spans') });
  t.teardown(() => bus.close());
  exporter.reset();
  const secret = `payload-${randomBytes(4).toString('hex')}`;
  const event = { stream: 'execution:x', seq: 1, type: 'tick', payload: { secret }, at: new Date().toISOString() };
  await bus.publish(event);
  await telemetry.flush();
  t.deepEqual(exporter.getFinishedSpans().map((s) => s.name), [], 'no parent span: no Redis span');

  const parentId = await inSpan('parent', {}, async (span) => {
    await bus.publish(event);
    return span.spanContext().spanId;
  });
  await telemetry.flush();
  const publish = exporter.getFinishedSpans().find((s) => s.name === 'redis.PUBLISH');
  if (!publish) return t.fail(`no redis.PUBLISH span among ${exporter.getFinishedSpans().map((s) => s.name).join(', ')}`);
  t.is(publish.parentSpanContext?.spanId, parentId, 'a child of the active span');
  t.like(publish.attributes, { 'db.system.name': 'redis', 'db.operation.name': 'PUBLISH', 'orch.redis.client': 'bus-publisher', 'server.address': '127.0.0.1' });
  t.false(JSON.stringify(publish.attributes).includes(secret), 'arguments are never recorded');
});

test.serial('a command Redis refuses fails its span; untracking unwraps the client', async (t) => {
  const r = new Redis(redisUrl(), { lazyConnect: true, maxRetriesPerRequest: 1 });
  r.on('error', () => undefined);
  await r.connect();
  t.teardown(() => r.disconnect());
  const plain = r.sendCommand;
  const untrack = trackRedis(r, 'test-client');
  t.not(r.sendCommand, plain, 'wrapped while tracked');
  exporter.reset();
  const key = `orch-test:spans:${randomBytes(6).toString('hex')}`;
  t.teardown(() => void r.del(key).catch(() => undefined));
  await inSpan('parent', {}, async () => {
    await r.set(key, 'a string');
    await t.throwsAsync(r.lpush(key, 'x'), { message: /WRONGTYPE/ });
  });
  await telemetry.flush();
  const spans = exporter.getFinishedSpans();
  t.is(spans.find((s) => s.name === 'redis.SET')?.status.code, SpanStatusCode.UNSET);
  const failed = spans.find((s) => s.name === 'redis.LPUSH');
  t.is(failed?.status.code, SpanStatusCode.ERROR);
  t.regex(failed?.status.message ?? '', /WRONGTYPE/);
  t.is(failed?.attributes['orch.redis.client'], 'test-client');
  untrack();
  t.is(r.sendCommand, plain, 'unwrapped after untrack');
});
