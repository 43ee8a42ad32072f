// ActorPost.warm (issue 18): the connections to the other controllers are opened before a message needs one — the
// first approval through another controller paid for the TCP and HTTP/2 set-up — and closed when a node is no longer
// listed. A plain HTTP/2 server stands for the peer (gRPC's transport): what is checked is that a session arrives
// with no call made, and goes away once the address is dropped.
import test from 'ava';
import http2 from 'node:http2';
import type net from 'node:net';
import { once } from 'node:events';
import { ActorPost } from '../../src/cluster/tell/post.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { openPg } from '../../src/storage/pg.ts';
import { eventually } from '../support/node-process.ts';
import { createTestDatabase } from '../support/pg.ts';

test('warm() connects to a listed node with no message sent, and lets it go once unlisted', async (t) => {
  const database = await createTestDatabase({ migrated: true });
  t.teardown(() => database.drop());
  const db = await openPg(database.url, { logger: silentLogger() });
  t.teardown(() => db.close());
  const sockets = new Set<http2.ServerHttp2Session>();
  let accepted = 0;
  const server = http2.createServer();
  server.on('session', (s) => {
    accepted++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  const address = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  const post = new ActorPost({ db, nodeId: 'ctl-a', logger: silentLogger() });
  t.teardown(() => post.close());

  post.warm([address]);
  await eventually(async () => (accepted >= 1 ? true : undefined), 10_000, 'a connection to the listed node');
  t.is(accepted, 1);
  // Listed again at the next heartbeat: the same connection serves, no second one is opened.
  post.warm([address]);
  await new Promise((r) => setTimeout(r, 300));
  t.is(accepted, 1);
  t.is(sockets.size, 1);

  post.warm([]);
  await eventually(async () => (sockets.size === 0 ? true : undefined), 10_000, 'the connection closed once the node is not listed');
  t.pass();
});
