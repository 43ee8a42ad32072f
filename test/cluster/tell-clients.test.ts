// ActorPost keeps one gRPC client per peer address it tells; a client not used for clientIdleMs is closed, so a
// long-lived controller does not keep a channel to every worker address it ever told (workers replaced, restarted
// nodes on new ports). The peers here are addresses nothing listens on: the tell fails over to the row (unheld).
// The post's clock is the test's: each tell to a dead address takes a call timeout and a database write, so on a loaded
// machine two tells in a row could be further apart than a wall-clock idle bound (the first client was closed before
// the second was counted).
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { generateNodeKey } from '../../src/cluster/node-key.ts';
import { ActorPost } from '../../src/cluster/tell/post.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { testDb } from './harness.ts';

test('a client to a peer not told for clientIdleMs is closed; one in use stays', async (t) => {
  const db = await testDb(t);
  const key = generateNodeKey();
  let now = 1_000_000;
  const post = new ActorPost({ db, nodeId: 'node-a', logger: silentLogger(), credentials: async () => ({ token: 'unused', key }), retryForMs: 0, callTimeoutMs: 200, clientIdleMs: 300, clock: () => now });
  t.teardown(() => post.close());
  const tellAt = (address: string): Promise<unknown> => post.tell('workflow', randomUUID(), { type: 'wake', topic: 't' }, { gone: false, nodeId: 'node-b', address });

  await tellAt('127.0.0.1:1');
  now += 299; // the bound itself: not idle yet
  await tellAt('127.0.0.1:2');
  t.is(post.openClients(), 2);
  now += 101; // :1 last told 400 ms ago, :2 101 ms ago
  await tellAt('127.0.0.1:2');
  t.is(post.openClients(), 1, 'the client to the peer not told for 400 ms was closed');
});
