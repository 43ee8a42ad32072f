// WorkerMembership with two controllers over real gRPC on loopback (docs/CLUSTER.md "Several controllers"). Each
// controller is reached through a TCP gate this test can shut (the port stops accepting, open connections are
// reset) and reopen on the same port, so "unreachable" and "back" are real socket events. Shown: the worker moves
// to the next controller when its own is cut, keeping its registration; it does not move back when the first one
// returns (no flapping); and when the second is cut it wraps around to the first.
import test from 'ava';
import { once } from 'node:events';
import net from 'node:net';
import { generateNodeKey } from '../../src/cluster/node-key.ts';
import { WorkerMembership } from '../../src/cluster/worker-membership.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { eventually } from '../support/node-process.ts';
import { relayTo, splitHostPort } from '../support/tcp-relay.ts';
import { caps, startController, TEST_JOIN_TOKEN, testDb } from './harness.ts';

interface Gate {
  address: string;
  /** Bytes carried from the worker since the gate was made. */
  carried(): number;
  cut(): Promise<void>;
  open(): Promise<void>;
  close(): Promise<void>;
}

async function gate(target: string): Promise<Gate> {
  const sockets = new Set<net.Socket>();
  let bytes = 0;
  let server: net.Server | undefined;
  const listen = async (on: number): Promise<number> => {
    const s = net.createServer(relayTo(splitHostPort(target), sockets, (d) => (bytes += d.length)));
    s.listen(on, '127.0.0.1');
    await once(s, 'listening');
    server = s;
    return (s.address() as net.AddressInfo).port;
  };
  const own = await listen(0);
  const cut = async (): Promise<void> => {
    const s = server;
    server = undefined;
    for (const sock of sockets) sock.resetAndDestroy();
    sockets.clear();
    if (s) await new Promise<void>((r) => s.close(() => r()));
  };
  return {
    address: `127.0.0.1:${own}`,
    carried: () => bytes,
    cut,
    open: async () => {
      await listen(own);
    },
    close: cut,
  };
}

test('two controllers: cut the current one and the worker moves on with its registration; it stays there when the first returns, and wraps around when the second is cut', async (t) => {
  t.timeout(180_000);
  const db = await testDb(t);
  const heartbeatMs = 500;
  const [ca, cb] = await Promise.all([startController(t, db, { heartbeatMs }), startController(t, db, { heartbeatMs })]);
  const [ga, gb] = await Promise.all([gate(ca.address), gate(cb.address)]);
  t.teardown(() => Promise.all([ga.close(), gb.close()]));
  const w = new WorkerMembership({
    controller: [ga.address, gb.address],
    nodeId: `w-${Math.random().toString(36).slice(2, 8)}`,
    role: 'worker',
    key: generateNodeKey(),
    joinToken: TEST_JOIN_TOKEN,
    capabilities: () => caps(['gpu']),
    grpcAddress: '127.0.0.1:1',
    heartbeatMs,
    // A cut gate refuses at once (UNAVAILABLE), so a move never waits for a deadline; a long one keeps a join or beat
    // that is merely slow on a loaded machine (attestation took over the default 2 s in a four-lane suite run) from
    // counting as the controller being unreachable, which moved the worker before its first join.
    callTimeoutMs: 60_000,
    load: () => ({ active_execution_count: 1, cpu_utilization_percent: 5, memory_utilization_percent: 50 }),
    logger: silentLogger(),
  });
  t.teardown(() => w.stop('test over', false));
  const moves: [string, string][] = [];
  const refusals: string[] = [];
  w.on('failover', (from: string, to: string) => moves.push([from, to]));
  w.on('refused', (m: string) => refusals.push(m));
  w.start();
  const [peer] = (await once(w, 'joined')) as [string];
  t.is(w.controller, ga.address, 'starts with the first of the list');
  const beats = async (n: number, what: string): Promise<void> => {
    const from = w.heartbeats;
    await eventually(async () => (w.heartbeats >= from + n ? true : undefined), 60_000, what);
  };
  await beats(2, 'heartbeats to the first controller');

  // The first controller becomes unreachable: after two periods without an answer the worker moves to the second.
  await ga.cut();
  await eventually(async () => (moves.length >= 1 ? true : undefined), 60_000, 'a move to the second controller');
  t.deepEqual(moves, [[ga.address, gb.address]]);
  t.is(w.controller, gb.address);
  const viaB = gb.carried();
  await beats(3, 'heartbeats to the second controller');
  t.true(gb.carried() > viaB, 'the heartbeats went through the second gate');
  t.is(w.peer, peer, 'same registration: the second controller accepted the token and session from the shared database');
  t.deepEqual(refusals, [], 'no new attestation was needed');

  // The first comes back: the worker stays where it is.
  await ga.open();
  await beats(6, 'heartbeats after the first controller returned');
  t.is(w.controller, gb.address, 'no move back to a recovered controller');
  t.is(moves.length, 1);

  // The second is cut: the worker wraps around to the first, again with the same registration.
  await gb.cut();
  await eventually(async () => (moves.length >= 2 ? true : undefined), 60_000, 'a move back to the first controller');
  t.deepEqual(moves[1], [gb.address, ga.address]);
  const viaA = ga.carried();
  await beats(3, 'heartbeats to the first controller again');
  t.true(ga.carried() > viaA);
  t.is(w.controller, ga.address);
  t.is(w.peer, peer);
  t.is(w.failovers, 2);
  const row = (await db.query<{ status: string; peer_id: string }>('SELECT status, peer_id FROM cluster_nodes WHERE peer_id = $1', [peer])).rows[0];
  t.is(row?.peer_id, peer);
});
