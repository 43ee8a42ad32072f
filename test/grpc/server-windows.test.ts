// newGrpcServer announces a large HTTP/2 receive window (per stream and per connection): with grpc-js's 64 KiB
// default, a 1 MiB FSAL Write waited on 16 WINDOW_UPDATE round trips (docs/BENCHMARKS.md, "FSAL and FUSE mounts").
// A raw HTTP/2 client reads the SETTINGS the server sends and the connection window it opens.
import http2 from 'node:http2';
import type { Socket } from 'node:net';
import { ServerCredentials } from '@grpc/grpc-js';
import test from 'ava';
import { FLOW_CONTROL_WINDOW, newGrpcServer } from '../../src/gateway/grpc/server-options.ts';

test('an orch gRPC server announces FLOW_CONTROL_WINDOW per stream and opens the connection window as wide', async (t) => {
  const server = newGrpcServer();
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  t.teardown(() => server.forceShutdown());
  const session = http2.connect(`http://127.0.0.1:${port}`);
  t.teardown(() => session.close());
  const settings = await new Promise<http2.Settings>((resolve, reject) => {
    session.once('remoteSettings', resolve);
    session.once('error', reject);
  });
  t.is(settings.initialWindowSize, FLOW_CONTROL_WINDOW);
  // The server's WINDOW_UPDATE for the connection arrives after its SETTINGS; wait for it.
  const deadline = Date.now() + 5000;
  while ((session.state.remoteWindowSize ?? 0) < FLOW_CONTROL_WINDOW && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  t.true((session.state.remoteWindowSize ?? 0) >= FLOW_CONTROL_WINDOW, `connection window ${session.state.remoteWindowSize}`);
});

// Without TCP_NODELAY on the server's sockets a large answer's last segment would wait for the client's delayed ACK.
// Node's HTTP/2 server sets it on every accepted socket (the session's socket, a proxy, refuses setNoDelay), and
// newGrpcServer relies on that: this checks it stays so.
test("an orch gRPC server's accepted sockets have Nagle's algorithm off", async (t) => {
  const server = newGrpcServer();
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  t.teardown(() => server.forceShutdown());
  const http2Servers = (server as unknown as { http2Servers: Map<http2.Http2Server, unknown> }).http2Servers;
  const noDelay = new Promise<unknown>((resolve) => {
    for (const h of http2Servers.keys()) {
      h.on('connection', (socket: Socket) => {
        const key = Object.getOwnPropertySymbols(socket).find((s) => s.description === 'kSetNoDelay');
        resolve(key === undefined ? 'no kSetNoDelay on this Node' : (socket as unknown as Record<symbol, unknown>)[key]);
      });
    }
  });
  const session = http2.connect(`http://127.0.0.1:${port}`);
  t.teardown(() => session.close());
  t.is(await noDelay, true);
});
