// Undrain (issue 22): an operator's undrain puts a drained member back to ACTIVE at once, drops a drain command not
// yet delivered, and sends an undrain command on the member's next heartbeat response; the worker takes work again
// and reports ACTIVE. A heartbeat sent before the undrain reached the worker (still saying DRAINING) may put the row
// back to DRAINING for a period; the worker's next ACTIVE heartbeat ends that (no operator drain stands). Heartbeats
// carry the event-loop delay into the row's load.
import test from 'ava';
import { once } from 'node:events';
import { generateNodeKey } from '../../src/cluster/node-key.ts';
import { listActiveWorkers } from '../../src/cluster/peers.ts';
import { WorkerMembership, type WorkerLoad } from '../../src/cluster/worker-membership.ts';
import { NodePeerStatus, type NodeCommand, type UndrainCommand } from '../../src/gen/orch/cluster/v1/cluster.js';
import { silentLogger } from '../../src/logging/logger.ts';
import { eventually } from '../support/node-process.ts';
import { attestNode, caps, sleep, startController, statusOf, TEST_JOIN_TOKEN, testDb } from './harness.ts';

function worker(address: string, load: () => WorkerLoad): WorkerMembership {
  return new WorkerMembership({
    controller: address,
    nodeId: `w-${Math.random().toString(36).slice(2, 8)}`,
    role: 'worker',
    key: generateNodeKey(),
    joinToken: TEST_JOIN_TOKEN,
    capabilities: () => caps(['gpu']),
    grpcAddress: '127.0.0.1:1',
    heartbeatMs: 300,
    load,
    logger: silentLogger(),
  });
}

test('undrain: ACTIVE at once, the undrain command on the next heartbeat, the worker takes work again and stays ACTIVE', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, { heartbeatMs: 300 });
  const w = worker(ctl.address, () => ({ active_execution_count: 0, cpu_utilization_percent: 3, memory_utilization_percent: 30, event_loop_delay_ms: 12.34 }));
  t.teardown(() => w.stop());
  w.start();
  await once(w, 'joined');
  const nodeId = (await db.query<{ node_id: string }>('SELECT node_id FROM cluster_nodes WHERE peer_id = $1', [w.peer])).rows[0]!.node_id;

  t.deepEqual(await ctl.membership.undrain(nodeId), { node_id: nodeId, status: 'ACTIVE', already: true }, 'an ACTIVE member: nothing to undo');
  const drained = once(w, 'drained');
  await ctl.membership.drain(nodeId, 'maintenance');
  await drained;
  t.true(w.isDraining());
  t.is((await listActiveWorkers(db)).length, 0, 'a draining member is not routed to');

  const told = once(w, 'undrain');
  t.deepEqual(await ctl.membership.undrain(nodeId, 'back in service'), { node_id: nodeId, status: 'ACTIVE', already: false });
  t.is(await statusOf(db, nodeId), 'ACTIVE', 'ACTIVE as soon as the undrain is answered');
  const [cmd] = (await told) as [UndrainCommand];
  t.is(cmd.reason, 'back in service');
  t.false(w.isDraining());
  // Heartbeats after the undrain (whatever was in flight) leave it ACTIVE and routable.
  await eventually(async () => ((await statusOf(db, nodeId)) === 'ACTIVE' && w.heartbeats > 3 ? true : undefined), 20_000, 'ACTIVE after heartbeats');
  await sleep(900);
  t.is(await statusOf(db, nodeId), 'ACTIVE');
  t.is((await listActiveWorkers(db)).length, 1);
  const row = (await db.query<{ load: WorkerLoad; drain_requested_at: Date | null }>('SELECT load, drain_requested_at FROM cluster_nodes WHERE node_id = $1', [nodeId])).rows[0]!;
  t.is(row.drain_requested_at, null);
  t.is(row.load.event_loop_delay_ms, 12.3, 'the heartbeat carries the event-loop delay');
  const events = (await db.query<{ payload: { status: string } }>(`SELECT payload FROM event_log WHERE stream = $1 AND type = 'status_changed' ORDER BY seq`, [`node:${nodeId}`])).rows.map((e) => e.payload.status);
  t.deepEqual(events.slice(-2), ['DRAINING', 'ACTIVE']);
  await t.throwsAsync(ctl.membership.undrain('no-such-node'), { message: /not found/ });
});

test('a DRAINING heartbeat sent before the undrain arrived: DRAINING for a period, ACTIVE on the next ACTIVE heartbeat', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, { heartbeatMs: 1000 });
  const node = await attestNode(t, ctl.address);
  const beat = (status: NodePeerStatus): Promise<{ commands: NodeCommand[] }> =>
    node.client.heartbeat({ peer_id: node.peerId!, active_execution_count: 0, cpu_utilization_percent: 1, memory_utilization_percent: 1, status }, node.creds());
  await ctl.membership.drain(node.nodeId, 'maintenance');
  // Drained and undrained before the member heard of either: the drain command is dropped, the undrain queued.
  await ctl.membership.undrain(node.nodeId);
  const first = await beat(NodePeerStatus.ACTIVE);
  t.deepEqual(first.commands.map((c) => c.command?.$case), ['undrain'], 'the undelivered drain is dropped');
  t.is(await statusOf(db, node.nodeId), 'ACTIVE');

  // Drain delivered, then undrain; the member's next heartbeat still says DRAINING (sent before it obeyed).
  await ctl.membership.drain(node.nodeId, 'again');
  t.deepEqual((await beat(NodePeerStatus.DRAINING)).commands.map((c) => c.command?.$case), ['drain']);
  await ctl.membership.undrain(node.nodeId);
  t.deepEqual((await beat(NodePeerStatus.DRAINING)).commands.map((c) => c.command?.$case), ['undrain']);
  t.is(await statusOf(db, node.nodeId), 'DRAINING', 'the member said DRAINING');
  t.deepEqual((await beat(NodePeerStatus.ACTIVE)).commands, []);
  t.is(await statusOf(db, node.nodeId), 'ACTIVE', 'no operator drain stands and the member takes work: ACTIVE');
  t.deepEqual((await beat(NodePeerStatus.ACTIVE)).commands, []);
  t.is(await statusOf(db, node.nodeId), 'ACTIVE');

  // An operator drain still holds against a member that says ACTIVE (it has not obeyed yet).
  await ctl.membership.drain(node.nodeId, 'third');
  await beat(NodePeerStatus.ACTIVE);
  await beat(NodePeerStatus.ACTIVE);
  t.is(await statusOf(db, node.nodeId), 'DRAINING');
});
