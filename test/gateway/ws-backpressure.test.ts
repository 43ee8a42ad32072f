// Back-pressure of the live feed: a real client that stops reading while events pour in is dropped (close 4008) and
// the server's memory stays flat, while a client that reads on the same stream gets every event.
import test from 'ava';
import v8 from 'node:v8';
import vm from 'node:vm';
import WebSocket from 'ws';
import { createTestDatabase } from '../support/pg.ts';
import { eventually } from '../support/node-process.ts';
import { FeedClient, refiningAgent, startTestNode, type Defer } from './ws-support.ts';
import { CLOSE_SLOW_CONSUMER, droppedFeedSockets } from '../../src/gateway/http/ws-feed.ts';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const cleanups: Array<() => Promise<unknown> | unknown> = [];
const defer: Defer = (fn) => void cleanups.push(fn);
test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

function serverMemory(): number {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

test('a client that stops reading is dropped with 4008 and memory stays flat; a reading client gets everything', async (t) => {
  const db = await createTestDatabase({ migrated: true });
  defer(() => db.drop());
  const n = await startTestNode(defer, { databaseUrl: db.url });
  const token = await n.token('t-slow');
  // With no model configured the execution fails at once: a real row and stream to follow.
  const dep = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: refiningAgent('slowpoke', 1) }, token);
  const ex = await n.api<{ execution_id: string }>('POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'x' }, token);
  const id = ex.body.execution_id;
  const stream = `execution:${id}`;
  await eventually(async () => ((await n.api<{ status: string }>('GET', `/v1/executions/${id}`, undefined, token)).body.status === 'failed' ? true : undefined), 60_000, 'failed');

  const slow = new FeedClient(n.ws, { token });
  await slow.opened;
  slow.send({ subscribe: stream });
  await slow.until((c) => c.messages.some((m) => m.subscribed === stream));
  // Stop reading: the socket is paused, so whatever the server sends piles up in the kernel and then in the server.
  slow.socket.pause();

  // The reader counts and discards, so the test's own memory stays out of the figure.
  const reader = new WebSocket(n.ws, { headers: { authorization: `Bearer ${token}` } });
  let readerLast = 0;
  let readerCount = 0;
  reader.on('message', (data: Buffer) => {
    const m = JSON.parse(data.toString()) as { seq?: number };
    if (typeof m.seq === 'number') {
      readerCount += 1;
      readerLast = m.seq;
    }
  });
  await new Promise<void>((resolve) => reader.once('open', () => resolve()));
  reader.send(JSON.stringify({ subscribe: stream }));
  await eventually(async () => (readerLast >= 2 ? true : undefined), 60_000, 'reader history');

  const dropsBefore = droppedFeedSockets();
  const before = serverMemory();
  // 15,000 events of 4 KiB on the stream (about 60 MB), as another publisher on the bus would announce them.
  const EVENTS = 15_000;
  const filler = 'x'.repeat(4096);
  const first = readerLast + 1;
  for (let i = 0; i < EVENTS; i++) {
    const seq = first + i;
    await n.node.bus.publish({ stream, seq, type: 'iteration_output', payload: { execution_id: id, iteration: 1, output: filler }, at: new Date().toISOString() });
    if (i % 200 === 199) await new Promise((r) => setImmediate(r));
    // Once dropped, read again: what was buffered arrives, then the close frame (before the server cuts it off).
    if (slow.socket.isPaused && droppedFeedSockets() > dropsBefore) slow.socket.resume();
  }
  await eventually(async () => (readerLast >= first + EVENTS - 1 ? true : undefined), 60_000, 'reader got everything');
  t.is(readerCount, 2 + EVENTS, 'the reading client saw each event once');
  t.is(droppedFeedSockets(), dropsBefore + 1, 'the paused client was dropped');
  const closed = await slow.closed;
  t.is(closed.code, CLOSE_SLOW_CONSUMER);
  const got = slow.messages.filter((m) => m.stream === stream).length;
  t.true(got < EVENTS / 2, `it received only what fitted in the buffers (${got})`);
  // What the (in-process) test client kept is not the server's.
  slow.messages.length = 0;
  const after = serverMemory();
  const grewMb = (after - before) / 1e6;
  t.log(`server heap+buffers before ${(before / 1e6).toFixed(1)} MB, after ${(after / 1e6).toFixed(1)} MB (flood ${((EVENTS * 4.2e3) / 1e6).toFixed(0)} MB)`);
  t.true(grewMb < 12, `memory grew ${grewMb.toFixed(1)} MB for a 60 MB flood to a paused client`);

  reader.terminate();
});
