// The router's cached view of membership (read at most once per viewTtlMs) must not outlive a drain: after the
// operator's drain is answered, no decision may pick the drained member, and a status change announced on the bus by
// any controller makes the next decision re-read membership. A long TTL makes the staleness certain without the fix.
import test from 'ava';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { MemoryBus } from '../../src/bus/memory.ts';
import { ExecutionRouter } from '../../src/cluster/routing.ts';
import { Membership } from '../../src/cluster/membership.ts';
import { ClusterService } from '../../src/cluster/service.ts';
import { dbForFile } from './harness.ts';

let db: Db;
dbForFile(test, (d) => (db = d));

async function member(id: string): Promise<void> {
  await db.query(
    `INSERT INTO cluster_nodes (node_id, role, status, grpc_address, tags, capabilities, registered_at, last_heartbeat_at, heartbeat_count, epoch, updated_at)
     VALUES ($1, 'worker', 'ACTIVE', $2, '[]', $3, now(), now(), 0, 0, now())`,
    [id, `${id}.local:50056`, JSON.stringify({ gpu_count: 0, vram_gb: 0, cpu_cores: 4, available_memory_gb: 8, supported_runtimes: ['process'], tags: [] })],
  );
}

test.serial('a drain answered by the cluster service is seen by the very next routing decision', async (t) => {
  await member('v-a');
  await member('v-b');
  const router = new ExecutionRouter(db, 'v-ctl', 60_000);
  const bus = new MemoryBus();
  const membership = new Membership({ db, bus, logger: silentLogger() });
  const cluster = new ClusterService(db, membership, () => router.invalidate());
  t.deepEqual([(await router.route()).nodeId, (await router.route()).nodeId], ['v-a', 'v-b'], 'the view is read once');
  await cluster.drain('v-b', 'test');
  const next = [(await router.route()).nodeId, (await router.route()).nodeId, (await router.route()).nodeId];
  t.deepEqual(next, ['v-a', 'v-a', 'v-a'], 'the drained member is never chosen after the drain was answered');
  await bus.close();
});

test.serial('without an invalidation the view is kept for its TTL (what the drain hook and the bus subscription repair)', async (t) => {
  await member('w-a');
  await member('w-b');
  const router = new ExecutionRouter(db, 'w-ctl', 60_000);
  const ours = async (): Promise<string> => {
    for (;;) {
      const id = (await router.route()).nodeId;
      if (id.startsWith('w-')) return id;
    }
  };
  await ours();
  await db.query(`UPDATE cluster_nodes SET status = 'DRAINING' WHERE node_id = 'w-b'`);
  const stale: string[] = [];
  for (let i = 0; i < 4; i++) stale.push(await ours());
  t.true(stale.includes('w-b'), `the cached view still holds w-b: ${stale.join(', ')}`);
  router.invalidate();
  const fresh: string[] = [];
  for (let i = 0; i < 4; i++) fresh.push(await ours());
  t.false(fresh.includes('w-b'), `after invalidate(): ${fresh.join(', ')}`);
});
