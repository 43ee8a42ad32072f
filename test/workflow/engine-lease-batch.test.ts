// Batch lease renewal in the workflow engine: every run a node drives is renewed by the node's one LeaseRenewer
// (one statement per third of the lease), and fencing stays exact — when another node takes a row over, the old
// owner does not renew it, its actor stops and it writes nothing more for that run.
import test from 'ava';
import { eventually } from '../support/node-process.ts';
import { manifest, startEngine } from './engine-harness.ts';

const SLOW = manifest(
  'dozer',
  'nap',
  `    nap:
      kind: System
      command: 'sleep 30'
      transitions: [{ target: after }]
    after:
      kind: System
      command: 'update_blackboard {"after": true}'
      transitions: []
`,
);

test('runs are renewed by one batch renewer; a row taken over is not renewed by the old owner and its actor stops', async (t) => {
  const a = await startEngine(t, { nodeId: 'node-a', leaseMs: 1500 });
  await a.deploy(SLOW);
  const ids = [await a.run('dozer'), await a.run('dozer'), await a.run('dozer')];
  for (const id of ids) await a.waitFor(id, 'running');
  await eventually(async () => (a.cap.renewer.size === 3 ? true : undefined), 20_000, 'all three runs held by the renewer');
  const lease = async (id: string): Promise<{ owner_node: string; epoch: number; expires: number }> =>
    (
      await a.db.query<{ owner_node: string; epoch: number; expires: number }>(
        `SELECT owner_node, epoch, (EXTRACT(EPOCH FROM lease_expires_at) * 1000)::FLOAT8 AS expires FROM workflow_executions WHERE id = $1`,
        [id],
      )
    ).rows[0]!;
  // Renewals move every run's expiry forward (the runs outlive their 1.5 s lease only because of them).
  const first = await Promise.all(ids.map(lease));
  await eventually(async () => {
    const now = await Promise.all(ids.map(lease));
    return now.every((l, i) => l.expires > first[i]!.expires && l.owner_node === 'node-a') ? true : undefined;
  }, 20_000, 'every run renewed');

  // node-b takes the second run over (as its sweep would after node-a's claim expired): a new epoch, its own lease.
  const [, taken] = ids;
  await a.db.query(`UPDATE workflow_executions SET owner_node = 'node-b', epoch = epoch + 1, lease_expires_at = now() + INTERVAL '10 minutes' WHERE id = $1`, [taken]);
  const theirs = await lease(taken!);
  await eventually(async () => (!a.actors.isLive('workflow', taken!) ? true : undefined), 20_000, 'the old owner\'s actor to stop');
  t.is(a.cap.renewer.size, 2, 'the lost run is no longer renewed');
  // Later ticks leave node-b's claim alone; the other two are still renewed by node-a.
  const others = await Promise.all([ids[0]!, ids[2]!].map(lease));
  await eventually(async () => {
    const now = await Promise.all([ids[0]!, ids[2]!].map(lease));
    return now.every((l, i) => l.expires > others[i]!.expires) ? true : undefined;
  }, 20_000, 'the runs still held renewed again');
  t.deepEqual(await lease(taken!), theirs, 'node-b\'s claim untouched by node-a');
  const completed = await a.db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM workflow_events WHERE execution_id = $1 AND type = 'WorkflowStateCompleted'`, [taken]);
  t.is(completed.rows[0]!.n, 0, 'the fenced-off owner wrote nothing for the run it lost');
  t.true(a.actors.isLive('workflow', ids[0]!) && a.actors.isLive('workflow', ids[2]!));
});
