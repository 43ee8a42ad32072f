// The EventBus suite on the in-process bus, with history in PGlite (the zero-install pairing).
import test from 'ava';
import type { BusEvent } from '../../src/bus/bus.ts';
import { MemoryBus } from '../../src/bus/memory.ts';
import { openBus } from '../../src/bus/open.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { freshPglite } from '../support/engines.ts';
import { busConformance } from './bus-conformance.ts';

busConformance({
  kind: 'memory',
  open: async () => {
    // A data dir from the schema template (~0.7 s of CPU), not memory:// (an initdb in WebAssembly, ~4 s, then every
    // migration): the bus only needs the schema (issue 15, the suite's time).
    const { db, cleanup } = await freshPglite('orch-bus-memory-')();
    await migrate(db);
    const bus = new MemoryBus(silentLogger());
    return {
      pub: bus,
      sub: bus,
      db,
      close: async () => {
        await bus.close();
        await cleanup();
      },
    };
  },
});

test('openBus without a URL is the in-process bus', async (t) => {
  const bus = await openBus({}, silentLogger());
  t.teardown(() => bus.close());
  t.is(bus.kind, 'memory');
});

test('memory: a subscriber cannot change what other subscribers or the publisher see', async (t) => {
  const bus = new MemoryBus();
  t.teardown(() => bus.close());
  const seen: unknown[] = [];
  const a = await bus.subscribe('s', (e) => {
    (e.payload as { n: number }).n = 99;
  });
  const b = await bus.subscribe('s', (e) => seen.push(e.payload));
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const event: BusEvent = { stream: 's', seq: 1, type: 't', payload: { n: 1 }, at: new Date().toISOString() };
  await bus.publish(event);
  await new Promise((r) => setTimeout(r, 20));
  t.deepEqual(seen, [{ n: 1 }]);
  t.deepEqual(event.payload, { n: 1 });
});
