// A controller's or hybrid's own heartbeat counts its pending and running executions in the statement that writes
// the load (issue 18, idle cost: the count was a statement of its own before every heartbeat). The load the node
// sampled (CPU, memory, event loop) is kept beside it; terminal executions and other nodes' are not counted.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { claimNode, heartbeatSelf, upsertSelf } from '../../src/actors/node-peer/repo.ts';
import { insertExecution } from '../../src/agents/execution/repo.ts';
import type { AgentManifest } from '../../src/agents/manifest/types.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { openPg } from '../../src/storage/pg.ts';
import { createTestDatabase } from '../support/pg.ts';

test("the self heartbeat writes the node's active executions, counted by its own statement, beside the sampled load", async (t) => {
  const database = await createTestDatabase({ migrated: true });
  t.teardown(() => database.drop());
  const db = await openPg(database.url, { logger: silentLogger() });
  t.teardown(() => db.close());
  const self = 'hyb-self';
  await upsertSelf(db, { nodeId: self, role: 'hybrid', grpcAddress: null, tags: [] });
  const claim = await claimNode(db, self, self, 10_000);
  t.truthy(claim);
  const exec = async (owner: string, status: string): Promise<void> => {
    const id = randomUUID();
    await insertExecution(db, { id, tenantId: 'orch-system', agentId: randomUUID(), agentName: 'a', agentVersion: '1.0.0', manifest: {} as AgentManifest, input: 'hi', ownerNode: owner, leaseMs: 60_000 });
    await db.query('UPDATE executions SET status = $2 WHERE id = $1', [id, status]);
  };
  await exec(self, 'pending');
  await exec(self, 'running');
  await exec(self, 'running');
  await exec(self, 'completed');
  await exec('another-node', 'running');
  const row = await heartbeatSelf(db, { nodeId: self, owner: self, epoch: claim!.epoch }, 10_000, { active_execution_count: 0, cpu_utilization_percent: 12.5 });
  const load = row.load as Record<string, unknown>;
  t.is(load.active_execution_count, 3);
  t.is(load.cpu_utilization_percent, 12.5);
  t.is(row.heartbeat_count, 1);
});
