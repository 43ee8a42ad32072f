// Membership over real gRPC on loopback against a controller on PostgreSQL: the worker's membership client joins,
// heartbeats with its load, obeys drain and sync_config commands, refreshes its token before it expires, attests
// again when the controller refuses its session; the controller's NodePeerActors mark a silent member UNHEALTHY
// and heartbeats bring it back; ListPeers filters by status; PushConfig reaches a worker's own server.
import test from 'ava';
import { status } from '@grpc/grpc-js';
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import { ClusterAuthority } from '../../src/cluster/authority.ts';
import { NodeClusterClient } from '../../src/cluster/client.ts';
import { workerClusterHandlers } from '../../src/cluster/grpc/cluster-handlers.ts';
import { createClusterServer } from '../../src/cluster/grpc/cluster-server.ts';
import { generateNodeKey } from '../../src/cluster/node-key.ts';
import { listActiveWorkers } from '../../src/cluster/peers.ts';
import { WorkerMembership, type WorkerLoad } from '../../src/cluster/worker-membership.ts';
import { startGrpcServer } from '../../src/gateway/grpc/start.ts';
import { NodePeerStatus, type DrainCommand } from '../../src/gen/orch/cluster/v1/cluster.js';
import { silentLogger } from '../../src/logging/logger.ts';
import { eventually } from '../support/node-process.ts';
import { attestNode, caps, refused, sleep, startController, statusOf, TEST_JOIN_TOKEN, testDb } from './harness.ts';

function worker(address: string, o: { nodeId?: string; heartbeatMs?: number; load?: () => WorkerLoad; applyConfig?: (y: string, h: string) => Promise<string | undefined>; refreshBeforeMs?: number; tags?: string[] } = {}): WorkerMembership {
  return new WorkerMembership({
    controller: address,
    nodeId: o.nodeId ?? `w-${Math.random().toString(36).slice(2, 8)}`,
    role: 'worker',
    key: generateNodeKey(),
    joinToken: TEST_JOIN_TOKEN,
    capabilities: () => caps(o.tags ?? ['gpu']),
    grpcAddress: '127.0.0.1:1',
    heartbeatMs: o.heartbeatMs ?? 300,
    // A command rides on one heartbeat response and is cleared from the row when answered: a response the worker
    // dropped at its default 2 s deadline on a loaded machine lost the drain or sync_config command, and this file's
    // waits for it hung a four-lane suite run. Load must not decide these tests (what is sent again and what is not:
    // docs/CLUSTER.md "Commands and lost answers").
    callTimeoutMs: 60_000,
    load: o.load ?? (() => ({ active_execution_count: 0, cpu_utilization_percent: 5, memory_utilization_percent: 50 })),
    ...(o.applyConfig ? { applyConfig: o.applyConfig } : {}),
    ...(o.refreshBeforeMs !== undefined ? { refreshBeforeMs: o.refreshBeforeMs } : {}),
    logger: silentLogger(),
  });
}

test('a worker joins, heartbeats with its load, and leaves with DeregisterNode', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, { heartbeatMs: 300 });
  let active = 3;
  const w = worker(ctl.address, { load: () => ({ active_execution_count: active, cpu_utilization_percent: 12.5, memory_utilization_percent: 40 }) });
  t.teardown(() => w.stop());
  w.start();
  const [peerId] = (await once(w, 'joined', { signal: AbortSignal.timeout(60_000) })) as [string];
  t.truthy(peerId);
  await eventually(async () => (w.heartbeats >= 2 ? true : undefined), 20_000, 'two heartbeats');
  const row = (await db.query<{ status: string; role: string; peer_id: string; load: WorkerLoad; tags: string[]; owner_node: string }>('SELECT * FROM cluster_nodes WHERE peer_id = $1', [peerId])).rows[0];
  t.is(row?.status, 'ACTIVE');
  t.is(row?.role, 'worker');
  t.is(row?.load.active_execution_count, 3);
  t.is(row?.load.cpu_utilization_percent, 12.5);
  t.deepEqual(row?.tags, ['gpu']);
  // The controller's NodePeerActor holds the row.
  await eventually(async () => ((await db.query<{ owner_node: string | null }>('SELECT owner_node FROM cluster_nodes WHERE peer_id = $1', [peerId])).rows[0]?.owner_node ? true : undefined), 60_000, 'the peer actor to claim the row');
  // listActiveWorkers: capabilities and tags meet the requirement or not.
  t.is((await listActiveWorkers(db, { tags: ['gpu'] })).length, 1);
  t.is((await listActiveWorkers(db, { tags: ['tpu'] })).length, 0);
  t.is((await listActiveWorkers(db, { cpu_cores: 64 })).length, 0);
  active = 0;
  await w.stop('test over');
  const after = (await db.query<{ status: string; session_id: string | null }>('SELECT status, session_id FROM cluster_nodes WHERE node_id = (SELECT node_id FROM cluster_nodes WHERE status = $1 LIMIT 1)', ['DEREGISTERED'])).rows[0];
  t.is(after?.status, 'DEREGISTERED');
  t.is(after?.session_id, null);
  t.is((await listActiveWorkers(db)).length, 0);
});

test('missed heartbeats make a member UNHEALTHY; heartbeats that resume make it ACTIVE again (1 s period)', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, { heartbeatMs: 1000, missedHeartbeats: 3 });
  const node = await attestNode(t, ctl.address);
  const beat = () => node.client.heartbeat({ peer_id: node.peerId!, active_execution_count: 1, cpu_utilization_percent: 1, memory_utilization_percent: 1, status: NodePeerStatus.ACTIVE }, node.creds());
  const statusEvents = async (): Promise<string[]> =>
    (await db.query<{ payload: { status: string } }>(`SELECT payload FROM event_log WHERE stream = $1 AND type = 'status_changed' ORDER BY seq`, [`node:${node.nodeId}`])).rows.map((e) => e.payload.status);
  // (Under a loaded machine registration and the first heartbeat may already be 3 s apart: count from here.)
  const silentSince = Date.now();
  await beat();
  const before = (await statusEvents()).length;
  await eventually(async () => ((await statusOf(db, node.nodeId)) === 'UNHEALTHY' ? true : undefined), 60_000, 'UNHEALTHY');
  const detectedMs = Date.now() - silentSince;
  t.true(detectedMs >= 2900, `not before three periods after the last heartbeat (${detectedMs} ms)`);
  t.log(`silent member marked UNHEALTHY after ${detectedMs} ms (3 missed 1 s heartbeats)`);
  t.is((await listActiveWorkers(db)).length, 0, 'an UNHEALTHY member is not routed to');
  await beat();
  t.is(await statusOf(db, node.nodeId), 'ACTIVE', 'the first heartbeat back brings it back');
  t.deepEqual((await statusEvents()).slice(before), ['UNHEALTHY', 'ACTIVE']);
});

test('drain: DRAINING at once, the drain command on the next heartbeat response, the worker reports DRAINING and drained', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, { heartbeatMs: 300 });
  let active = 1;
  const w = worker(ctl.address, { load: () => ({ active_execution_count: active, cpu_utilization_percent: 1, memory_utilization_percent: 1 }) });
  t.teardown(() => w.stop());
  w.start();
  await once(w, 'joined', { signal: AbortSignal.timeout(60_000) });
  const nodeId = (await db.query<{ node_id: string }>('SELECT node_id FROM cluster_nodes WHERE peer_id = $1', [w.peer])).rows[0]!.node_id;
  const told = once(w, 'drain', { signal: AbortSignal.timeout(60_000) });
  const r = await ctl.membership.drain(nodeId, 'maintenance');
  t.deepEqual(r, { node_id: nodeId, status: 'DRAINING', already: false });
  t.is(await statusOf(db, nodeId), 'DRAINING');
  const [cmd] = (await told) as [DrainCommand];
  t.is(cmd.reason, 'maintenance');
  t.true(w.isDraining());
  t.is((await ctl.membership.drain(nodeId)).already, true, 'a second drain is a no-op');
  const drained = once(w, 'drained', { signal: AbortSignal.timeout(60_000) });
  active = 0;
  await drained;
  await sleep(700);
  t.is(await statusOf(db, nodeId), 'DRAINING', 'heartbeats keep it DRAINING');
  await t.throwsAsync(ctl.membership.drain('no-such-node'), { message: /not found/ });
});

test('sync_config: the worker fetches the managed sections, checks their SHA-256 and applies them once', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, { heartbeatMs: 300 });
  const applied: { yaml: string; hash: string }[] = [];
  const w = worker(ctl.address, { applyConfig: async (yaml, hash) => void applied.push({ yaml, hash }) });
  t.teardown(() => w.stop());
  w.start();
  await once(w, 'joined', { signal: AbortSignal.timeout(60_000) });
  const yaml = 'cluster:\n  heartbeat_interval_seconds: 0.5\nllm_providers:\n  - { name: local, type: openai, endpoint: http://127.0.0.1:9, models: [{ alias: default, model: m }] }\n';
  const hash = await ctl.membership.setManagedConfig(yaml);
  t.is(hash, createHash('sha256').update(yaml).digest('hex'));
  const [got] = (await once(w, 'config', { signal: AbortSignal.timeout(60_000) })) as [string];
  t.is(got, hash);
  t.deepEqual(applied, [{ yaml, hash }]);
  await sleep(900);
  t.is(applied.length, 1, 'applied once');
  t.is((await db.query<{ applied_config_hash: string }>('SELECT applied_config_hash FROM cluster_nodes WHERE peer_id = $1', [w.peer])).rows[0]?.applied_config_hash, hash);
  await t.throwsAsync(ctl.membership.setManagedConfig('database: { url: postgres://x }\n'), { message: /not a controller-managed section/ });
});

test('the token is refreshed before it expires; a refused session is attested again', async (t) => {
  const db = await testDb(t);
  t.timeout(150_000);
  // Eight-second tokens, refreshed when less than 5 s are left: the member outlives several tokens.
  const ctl = await startController(t, db, { heartbeatMs: 300, tokenLifetimeSeconds: 8 });
  const w = worker(ctl.address, { refreshBeforeMs: 5000 });
  t.teardown(() => w.stop());
  const refusals: string[] = [];
  w.on('refused', (m: string) => refusals.push(m));
  w.start();
  const [peer] = (await once(w, 'joined', { signal: AbortSignal.timeout(60_000) })) as [string];
  const sessions = new Set<string>();
  const until = Date.now() + 14_000;
  while (Date.now() < until) {
    const s = (await db.query<{ session_id: string }>('SELECT session_id FROM cluster_nodes WHERE peer_id = $1', [peer])).rows[0]?.session_id;
    if (s) sessions.add(s);
    await sleep(200);
  }
  t.deepEqual(refusals, [], 'never refused');
  t.true(sessions.size >= 3, `the session moved with each refresh (${sessions.size})`);
  t.is(w.peer, peer, 'same registration');
  // The controller forgets the session (as after a database restore): the worker attests and registers again.
  // A token refresh (a new attestation, every ~3 s here) that is under way when the session is forgotten writes its
  // new session over 'gone', and then there is nothing to refuse: forget it again until the worker is refused.
  const rejoined = once(w, 'joined');
  let again: string | undefined;
  for (let attempt = 0; attempt < 10 && again === undefined; attempt++) {
    await db.query(`UPDATE cluster_nodes SET session_id = 'gone' WHERE peer_id = $1`, [peer]);
    again = (await Promise.race([rejoined.then(([p]) => p as string), sleep(8000).then(() => undefined)])) as string | undefined;
  }
  if (again === undefined) return t.fail('the worker never registered again after its session was forgotten');
  t.not(again, peer);
  t.true(refusals.length >= 1);
  t.is((await db.query<{ status: string }>('SELECT status FROM cluster_nodes WHERE peer_id = $1', [again])).rows[0]?.status, 'ACTIVE');
});

test('ListPeers with and without the status filter', async (t) => {
  const db = await testDb(t);
  // These members send no heartbeats: a long deadline keeps them from turning UNHEALTHY during the test.
  const ctl = await startController(t, db, { heartbeatMs: 1000, missedHeartbeats: 100 });
  const a = await attestNode(t, ctl.address, { nodeId: 'peer-a', tags: ['x'] });
  await attestNode(t, ctl.address, { nodeId: 'peer-b' });
  await ctl.membership.drain('peer-b');
  const all = await a.client.listPeers({}, a.creds());
  t.deepEqual(all.peers.map((p) => [p.node_id, p.status]), [['peer-a', NodePeerStatus.ACTIVE], ['peer-b', NodePeerStatus.DRAINING]]);
  t.deepEqual(all.peers[0]?.capabilities?.tags, ['x']);
  t.is(all.peers[0]?.grpc_address, '127.0.0.1:1');
  const draining = await a.client.listPeers({ filter_status: NodePeerStatus.DRAINING }, a.creds());
  t.deepEqual(draining.peers.map((p) => p.node_id), ['peer-b']);
  const active = await a.client.listPeers({ filter_status: NodePeerStatus.ACTIVE }, a.creds());
  t.deepEqual(active.peers.map((p) => p.node_id), ['peer-a']);
});

test('PushConfig: a controller token is accepted or answered with rejection_reason; a worker token is refused', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db);
  const applied: string[] = [];
  const authority = new ClusterAuthority({ db, logger: silentLogger() });
  const server = await startGrpcServer(
    createClusterServer({
      logger: silentLogger(),
      handlers: workerClusterHandlers({
        authority,
        logger: silentLogger(),
        applyConfig: async (yaml, hash) => {
          if (createHash('sha256').update(yaml).digest('hex') !== hash) return 'config_hash is not the SHA-256 of config_yaml';
          applied.push(hash);
          return undefined;
        },
      }),
    }),
    '127.0.0.1',
    0,
  );
  t.teardown(() => server.close());
  const c = new NodeClusterClient(`127.0.0.1:${server.port}`, 30_000);
  t.teardown(() => c.close());
  const self = await ctl.authority.selfCredentials('ctl-1', 'controller', generateNodeKey());
  const yaml = 'cluster: { heartbeat_interval_seconds: 2 }\n';
  const hash = createHash('sha256').update(yaml).digest('hex');
  const ok = await c.pushConfig({ config_yaml: yaml, config_hash: hash }, self);
  t.true(ok.accepted);
  t.is(ok.rejection_reason, undefined);
  const bad = await c.pushConfig({ config_yaml: yaml, config_hash: 'f'.repeat(64) }, self);
  t.false(bad.accepted);
  t.regex(bad.rejection_reason ?? '', /SHA-256/);
  const member = await attestNode(t, ctl.address);
  const err = await refused(c.pushConfig({ config_yaml: yaml, config_hash: hash }, member.creds()));
  t.is(err.code, status.PERMISSION_DENIED);
  t.deepEqual(applied, [hash]);
});

// A command rides on a heartbeat answer. When that answer never reaches the worker (its call deadline passed first, or
// the connection dropped), a drain was lost for good: the controller had taken it out of the row. While an operator
// drain stands and the member still reports ACTIVE, each heartbeat answer carries the drain again.
test('a drain whose heartbeat answer was lost rides on the next answer, until the member reports DRAINING', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, { heartbeatMs: 1000 });
  const node = await attestNode(t, ctl.address);
  const beat = async (reported: NodePeerStatus): Promise<string[]> =>
    (await node.client.heartbeat({ peer_id: node.peerId!, active_execution_count: 1, cpu_utilization_percent: 1, memory_utilization_percent: 1, status: reported }, node.creds())).commands.map(
      (c) => (c.command?.$case === 'drain' ? `drain:${c.command.value.reason}` : String(c.command?.$case)),
    );
  t.deepEqual(await beat(NodePeerStatus.ACTIVE), []);
  await ctl.membership.drain(node.nodeId, 'maintenance');
  t.deepEqual(await beat(NodePeerStatus.ACTIVE), ['drain:maintenance'], 'the drain on the next answer (this one is lost)');
  t.deepEqual(await beat(NodePeerStatus.ACTIVE), ['drain:maintenance'], 'the member still says ACTIVE: the drain again');
  t.deepEqual(await beat(NodePeerStatus.DRAINING), [], 'obeyed: nothing more to send');
  t.deepEqual(await beat(NodePeerStatus.DRAINING), []);
  t.is(await statusOf(db, node.nodeId), 'DRAINING');
  // Undrained: the member reporting ACTIVE is not sent a drain again.
  await ctl.membership.undrain(node.nodeId, 'done');
  t.deepEqual(await beat(NodePeerStatus.DRAINING), ['undrain']);
  t.deepEqual(await beat(NodePeerStatus.ACTIVE), []);
  t.is(await statusOf(db, node.nodeId), 'ACTIVE');
});
