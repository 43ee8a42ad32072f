// Cluster membership under CockroachDB's rules (issue 17): two in-process controllers over one PostgreSQL database
// whose sessions are all SERIALIZABLE, with SQLSTATE 40001 injected on a seeded fraction of statements (first,
// mid-transaction, at commit, standalone; test/support/faulty-db.ts) beneath the adapter's retry loops. Workers
// join, heartbeat, drain, go silent and come back; every step must land exactly once: one row per node, each
// node's event stream 1..n, status changes in order and none repeated.
import test from 'ava';
import { once } from 'node:events';
import { generateNodeKey } from '../../src/cluster/node-key.ts';
import { listActiveWorkers } from '../../src/cluster/peers.ts';
import { WorkerMembership } from '../../src/cluster/worker-membership.ts';
import { NodePeerStatus } from '../../src/gen/orch/cluster/v1/cluster.js';
import { silentLogger } from '../../src/logging/logger.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { openPg } from '../../src/storage/pg.ts';
import { describeFaults, faultSeed, faultyDb, serializableUrl, type FaultyDb } from '../support/faulty-db.ts';
import { eventually } from '../support/node-process.ts';
import { createTestDatabase } from '../support/pg.ts';
import { attestNode, caps, startController, statusOf, TEST_JOIN_TOKEN } from './harness.ts';

const SEED = faultSeed(1717);

test('two controllers, three workers: join, heartbeat, drain, silence and return, each recorded once', async (t) => {
  const database = await createTestDatabase();
  let faults: FaultyDb | undefined;
  const db = await openPg(serializableUrl(database.url), {
    logger: silentLogger(),
    inject: (raw) => (faults = faultyDb(raw, { seed: SEED, first: 0.08, mid: 0.04, commit: 0.08, standalone: 0.04 })).db,
  });
  t.teardown(async () => {
    await db.close();
    await database.drop();
  });
  await migrate(db, silentLogger());
  const ctlA = await startController(t, db, { heartbeatMs: 500, selfId: 'ctl-a' });
  const ctlB = await startController(t, db, { heartbeatMs: 500, selfId: 'ctl-b' });
  const workers = ['w-1', 'w-2', 'w-3'].map(
    (nodeId, i) =>
      new WorkerMembership({
        controller: (i % 2 === 0 ? ctlA : ctlB).address,
        nodeId,
        role: 'worker',
        key: generateNodeKey(),
        joinToken: TEST_JOIN_TOKEN,
        capabilities: () => caps([]),
        grpcAddress: '127.0.0.1:1',
        heartbeatMs: 300,
        load: () => ({ active_execution_count: 0, cpu_utilization_percent: 1, memory_utilization_percent: 1 }),
        logger: silentLogger(),
      }),
  );
  for (const w of workers) {
    t.teardown(() => w.stop());
    const joined = once(w, 'joined');
    w.start();
    await joined;
  }
  await eventually(async () => ((await listActiveWorkers(db)).length === 3 ? true : undefined), 60_000, 'three ACTIVE workers');
  await eventually(async () => (workers.every((w) => w.heartbeats >= 5) ? true : undefined), 60_000, 'five heartbeats each');

  const drained = once(workers[1]!, 'drain');
  t.like(await ctlB.membership.drain('w-2', 'maintenance'), { status: 'DRAINING', already: false });
  await drained;

  // A silent member (attested by hand, no heartbeats) goes UNHEALTHY; one heartbeat brings it back.
  const silent = await attestNode(t, ctlA.address, { nodeId: 'w-silent' });
  await eventually(async () => ((await statusOf(db, 'w-silent')) === 'UNHEALTHY' ? true : undefined), 60_000, 'UNHEALTHY');
  await silent.client.heartbeat({ peer_id: silent.peerId!, active_execution_count: 0, cpu_utilization_percent: 1, memory_utilization_percent: 1, status: NodePeerStatus.ACTIVE }, silent.creds());
  t.is(await statusOf(db, 'w-silent'), 'ACTIVE');

  faults!.enable(false);
  const rows = await db.query<{ node_id: string; status: string }>('SELECT node_id, status FROM cluster_nodes ORDER BY node_id');
  t.deepEqual(rows.rows, [
    { node_id: 'w-1', status: 'ACTIVE' },
    { node_id: 'w-2', status: 'DRAINING' },
    { node_id: 'w-3', status: 'ACTIVE' },
    { node_id: 'w-silent', status: 'ACTIVE' },
  ]);
  for (const id of ['w-1', 'w-2', 'w-3', 'w-silent']) {
    const events = await db.query<{ seq: number; type: string; payload: { status?: string } }>('SELECT seq, type, payload FROM event_log WHERE stream = $1 ORDER BY seq', [`node:${id}`]);
    t.deepEqual(events.rows.map((e) => e.seq), events.rows.map((_, i) => i + 1), `${id}: 1..n`);
    const statuses = events.rows.filter((e) => e.type === 'status_changed').map((e) => e.payload.status);
    for (let i = 1; i < statuses.length; i++) t.not(statuses[i], statuses[i - 1], `${id}: no status change recorded twice (${statuses.join(',')})`);
    if (id === 'w-2') t.is(statuses.at(-1), 'DRAINING');
    if (id === 'w-silent') t.deepEqual(statuses.slice(-2), ['UNHEALTHY', 'ACTIVE']);
  }
  const c = faults!.counts;
  t.log(`seed=${SEED} ${describeFaults(c)}`);
  t.true(c.first > 0 && c.mid > 0 && c.commit > 0 && c.standalone > 0, describeFaults(c));
  t.is(c.swallowed, 0);
});
