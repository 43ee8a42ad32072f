// Two nodes on one database: a cancel asked on the node that does not own the run reaches the owner (through the
// row, at its next lease renewal); and when a node's claim expires, another node's recovery takes the run over (a
// new epoch) — by its periodic sweep, or at start-up (recoverAll) — re-runs the interrupted visit, and the first node's actor, fenced off, stops without writing.
import test from 'ava';
import { recoverAll } from '../../src/actors/recovery.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { eventually } from '../support/node-process.ts';
import { manifest, startEngine, TENANT } from './engine-harness.ts';

const SLOW = manifest(
  'slowpoke',
  'nap',
  `    nap:
      kind: System
      command: 'sleep {{input.s}}; echo "$(date +%s%N)" >> /workspace/nap.log'
      transitions: [{ target: after }]
    after:
      kind: System
      command: 'update_blackboard {"after": true}'
      transitions: []
`,
);

test('a cancel asked on another node reaches the owner through the row', async (t) => {
  const a = await startEngine(t, { nodeId: 'node-a', leaseMs: 1500 });
  const b = await startEngine(t, { nodeId: 'node-b', leaseMs: 1500, db: { url: a.url! } });
  await a.deploy(SLOW);
  const id = await a.run('slowpoke', { input: { s: 30 } });
  await a.waitFor(id, 'running');
  await new Promise((r) => setTimeout(r, 300));
  t.like(await b.cap.runs.cancel(TENANT, id), { cancelled: true });
  const row = await a.waitFor(id, undefined, 60_000);
  t.is(row.status, 'cancelled');
  t.is(row.owner_node, 'node-a', 'recorded by the owner');
});

async function takeover(t: import('ava').ExecutionContext, via: 'sweep' | 'recovery'): Promise<void> {
  const a = await startEngine(t, { nodeId: 'node-a', leaseMs: 60_000 });
  const b = await startEngine(t, { nodeId: 'node-b', leaseMs: 60_000, db: { url: a.url! } });
  await a.deploy(SLOW);
  // The nap runs long enough that node-a is still in it when its claim is expired below, even on a loaded machine.
  const id = await a.run('slowpoke', { input: { s: 6 } });
  await a.waitFor(id, 'running');
  await new Promise((r) => setTimeout(r, 300));
  // node-a stops renewing (as if partitioned): its claim expires, node-b's recovery claims the run.
  await a.db.query(`UPDATE workflow_executions SET lease_expires_at = now() - INTERVAL '1 second' WHERE id = $1`, [id]);
  if (via === 'recovery') {
    const reports = await recoverAll(b.actors, b.cap.kinds, silentLogger());
    t.deepEqual(reports[0]!.keys, [id]);
  } else {
    // The sweep of a running node takes the run over without any restart.
    t.teardown(b.cap.startSweeper(200));
  }
  const row = await b.waitFor(id, undefined, 60_000);
  t.is(row.status, 'completed', row.error ?? '');
  t.is(row.owner_node, 'node-b');
  t.is(row.epoch, 1);
  const entered = await b.db.query<{ state_name: string; n: number }>(
    `SELECT state_name, count(*)::INT4 AS n FROM workflow_events WHERE execution_id = $1 AND type = 'WorkflowStateEntered' GROUP BY state_name ORDER BY state_name`,
    [id],
  );
  t.deepEqual(entered.rows, [{ state_name: 'after', n: 1 }, { state_name: 'nap', n: 1 }]);
  const completed = await b.db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM workflow_events WHERE execution_id = $1 AND type = 'WorkflowStateCompleted'`, [id]);
  t.is(completed.rows[0]!.n, 2, 'the fenced-off first run of "nap" wrote nothing');
  // The old owner stops once its nap ends and its fenced write is refused (a condition, not a guessed delay).
  await eventually(async () => (!a.actors.isLive('workflow', id) ? true : undefined), 60_000, 'the old owner to stop').catch(() => undefined);
  t.false(a.actors.isLive('workflow', id), 'the old owner stopped');
}

test('an expired claim is taken over by another node\'s sweep, which re-runs the visit; the old owner is fenced off', (t) => takeover(t, 'sweep'));
test('an expired claim is taken over at another node\'s start-up recovery', (t) => takeover(t, 'recovery'));
