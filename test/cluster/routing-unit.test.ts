// The routing decision and the worker-loss rule on a real PostgreSQL database (the process-level tests are
// routing.test.ts and worker-hang.test.ts): the rotation by node id, capability and tag filters, statuses that are
// never routed to, requirements read from the agent manifest; and handleWorkerLost — a pending execution comes back
// to the controller to be routed again, a running one fails `worker_lost` with one terminal event, and of two
// controllers acting at once only one changes the row; with a resume rule, a running one is taken back to be resumed
// on a survivor (the loss recorded in its stream) until no survivor is left or its resumes are used up.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { MemoryBus } from '../../src/bus/memory.ts';
import { ExecutionRouter, requirementsOf } from '../../src/cluster/routing.ts';
import { handleWorkerLost } from '../../src/cluster/forwarding.ts';
import type { ResumePolicy } from '../../src/cluster/resume.ts';
import { insertExecution } from '../../src/agents/execution/repo.ts';
import { readExecutionEvents } from '../../src/agents/execution/events.ts';
import { isOrchError } from '../../src/errors/catalog.ts';
import type { AgentManifest } from '../../src/agents/manifest/types.ts';
import { dbForFile } from './harness.ts';

let db: Db;
dbForFile(test, (d) => (db = d));

async function member(id: string, status: string, tags: string[] = [], role = 'worker', runtimes = ['process']): Promise<void> {
  await db.query(
    `INSERT INTO cluster_nodes (node_id, role, status, grpc_address, tags, capabilities, registered_at, last_heartbeat_at, heartbeat_count, epoch, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, now(), now(), 0, 0, now())
     ON CONFLICT (node_id) DO UPDATE SET status = excluded.status`,
    [id, role, status, `${id}.local:50056`, JSON.stringify(tags), JSON.stringify({ gpu_count: 0, vram_gb: 0, cpu_cores: 4, available_memory_gb: 8, supported_runtimes: runtimes, tags })],
  );
}

test.serial('round-robin by node id among ACTIVE workers that meet the request; members joining or leaving do not upset it', async (t) => {
  await member('r-a', 'ACTIVE');
  await member('r-b', 'ACTIVE', ['gpu'], 'worker', ['process', 'docker']);
  await member('r-c', 'ACTIVE');
  await member('r-d', 'DRAINING');
  await member('r-e', 'UNHEALTHY');
  await member('r-f', 'DEREGISTERED');
  await member('r-ctl', 'ACTIVE', [], 'controller');
  const router = new ExecutionRouter(db, 'r-ctl', 0);
  const six: string[] = [];
  for (let i = 0; i < 6; i++) six.push((await router.route()).nodeId);
  t.deepEqual(six, ['r-a', 'r-b', 'r-c', 'r-a', 'r-b', 'r-c'], 'never DRAINING, UNHEALTHY, DEREGISTERED or a controller');
  t.is((await router.route()).grpcAddress, 'r-a.local:50056');
  // r-b leaves, r-bb joins: after r-a comes the next id in order.
  await member('r-b', 'DRAINING');
  await member('r-bb', 'ACTIVE');
  t.deepEqual([(await router.route()).nodeId, (await router.route()).nodeId, (await router.route()).nodeId], ['r-bb', 'r-c', 'r-a']);
  await member('r-b', 'ACTIVE', ['gpu'], 'worker', ['process', 'docker']);
  // Tags and runtimes.
  for (let i = 0; i < 3; i++) t.is((await router.route({ tags: ['gpu'] })).nodeId, 'r-b');
  t.is((await router.route({ supported_runtimes: ['docker'] })).nodeId, 'r-b');
  // Excluded (already tried) and impossible requests.
  t.not((await router.route(undefined, ['r-a', 'r-b', 'r-bb'])).nodeId, 'r-a');
  const err = await t.throwsAsync(router.route({ tags: ['tpu'] }));
  t.true(isOrchError(err));
  t.regex(err!.message, /no ACTIVE worker meets the request \(tags \[tpu\]\)/);
  await t.throwsAsync(router.route({ gpu_count: 1 }), { message: /gpu_count >= 1/ });
});

test('requirements come from the agent manifest: node-tags and gpu-count labels, docker isolation', (t) => {
  const m = (labels: Record<string, string>, isolation: 'process' | 'docker' = 'process'): AgentManifest =>
    ({ metadata: { name: 'x', version: '1.0.0', labels }, spec: { runtime: { isolation } } }) as unknown as AgentManifest;
  t.deepEqual(requirementsOf(m({})), {});
  t.deepEqual(requirementsOf(m({ 'orch.dev/node-tags': ' gpu, fast ,' })), { tags: ['gpu', 'fast'] });
  t.deepEqual(requirementsOf(m({ 'orch.dev/gpu-count': '2' }, 'docker')), { gpu_count: 2, supported_runtimes: ['docker'] });
  t.deepEqual(requirementsOf(m({ 'orch.dev/gpu-count': 'lots' })), {});
});

async function execution(owner: string, status: 'pending' | 'running'): Promise<string> {
  const id = randomUUID();
  await db.tx((tx) =>
    insertExecution(tx, {
      id,
      tenantId: 't-loss',
      agentId: randomUUID(),
      agentName: 'a',
      agentVersion: '1.0.0',
      manifest: {} as AgentManifest,
      input: 'x',
      ownerNode: owner,
      leaseMs: 30_000,
    }),
  );
  if (status === 'running') await db.query(`UPDATE executions SET status = 'running', iteration = 1 WHERE id = $1`, [id]);
  return id;
}

test('worker lost: pending comes back to the controller, running fails worker_lost once, a second controller changes nothing', async (t) => {
  const bus = new MemoryBus(silentLogger());
  const s = { db, bus, logger: silentLogger() };
  const pending = await execution('w-lost', 'pending');
  const before = (await db.query<{ epoch: number }>('SELECT epoch FROM executions WHERE id = $1', [pending])).rows[0]!.epoch;
  t.is(await handleWorkerLost(s, pending, 'w-lost', 'ctl-1', 30_000), 'rerouted');
  const back = (await db.query<{ owner_node: string; status: string; epoch: number }>('SELECT owner_node, status, epoch FROM executions WHERE id = $1', [pending])).rows[0]!;
  t.deepEqual({ owner: back.owner_node, status: back.status }, { owner: 'ctl-1', status: 'pending' });
  t.is(back.epoch, before + 1, 'the lost worker is fenced');
  t.is(await handleWorkerLost(s, pending, 'w-lost', 'ctl-2', 30_000), 'unchanged', 'no longer the lost worker\'s');

  const running = await execution('w-lost', 'running');
  const [first, second] = await Promise.all([handleWorkerLost(s, running, 'w-lost', 'ctl-1', 30_000), handleWorkerLost(s, running, 'w-lost', 'ctl-2', 30_000)]);
  t.deepEqual([first, second].sort(), ['failed', 'unchanged'], 'exactly one controller records it');
  const row = (await db.query<{ status: string; reason: string; owner_node: string | null }>('SELECT status, reason, owner_node FROM executions WHERE id = $1', [running])).rows[0]!;
  t.deepEqual(row, { status: 'failed', reason: 'worker_lost', owner_node: null });
  const events = await readExecutionEvents(db, running);
  t.deepEqual(events.map((e) => e.type), ['execution_failed']);
  t.like(events[0]!.payload, { reason: 'worker_lost', total_iterations: 1 });
  // A finished execution is never touched.
  t.is(await handleWorkerLost(s, running, 'w-lost', 'ctl-1', 30_000), 'unchanged');
});

test('worker lost with a survivor: a running execution is taken back to be resumed, once, until its resumes run out', async (t) => {
  const bus = new MemoryBus(silentLogger());
  const s = { db, bus, logger: silentLogger() };
  const survivors = (ok: boolean, maxResumes = 1): ResumePolicy => ({ maxResumes, survivorFor: async () => ok });
  const rowOf = async (id: string) =>
    (await db.query<{ owner_node: string | null; status: string; epoch: number; reason: string | null }>('SELECT owner_node, status, epoch, reason FROM executions WHERE id = $1', [id])).rows[0]!;

  const id = await execution('w-gone', 'running');
  const before = await rowOf(id);
  const both = await Promise.all([
    handleWorkerLost(s, id, 'w-gone', 'ctl-1', 30_000, survivors(true)),
    handleWorkerLost(s, id, 'w-gone', 'ctl-2', 30_000, survivors(true)),
  ]);
  t.deepEqual([...both].sort(), ['resumed', 'unchanged'], 'exactly one controller takes it back');
  const back = await rowOf(id);
  t.is(back.status, 'running', 'still running: it is resumed, not failed');
  t.true(back.owner_node === 'ctl-1' || back.owner_node === 'ctl-2');
  t.is(back.epoch, before.epoch + 1, 'the lost worker is fenced');
  const events = await readExecutionEvents(db, id);
  t.deepEqual(events.map((e) => e.type), ['iteration_output'], 'the loss is in the stream, nothing terminal');
  t.like(events[0]!.payload, { iteration_number: 1, resume: { lost_worker: 'w-gone', iteration: 1, completed_iterations: 0, journal_steps: 0, attempt: 1 } });

  // Handed to a survivor that is lost too: its one resume is used up, so it ends worker_lost.
  await db.query(`UPDATE executions SET owner_node = 'w-next' WHERE id = $1`, [id]);
  t.is(await handleWorkerLost(s, id, 'w-next', 'ctl-1', 30_000, survivors(true)), 'failed');
  t.like(await rowOf(id), { status: 'failed', reason: 'worker_lost', owner_node: null });

  // No survivor meets the request: worker_lost at once.
  const alone = await execution('w-alone', 'running');
  t.is(await handleWorkerLost(s, alone, 'w-alone', 'ctl-1', 30_000, survivors(false)), 'failed');
  t.like(await rowOf(alone), { status: 'failed', reason: 'worker_lost' });
  // A cancel was asked: not resumed.
  const cancelled = await execution('w-c', 'running');
  await db.query('UPDATE executions SET cancel_requested = true WHERE id = $1', [cancelled]);
  t.is(await handleWorkerLost(s, cancelled, 'w-c', 'ctl-1', 30_000, survivors(true, 3)), 'failed');
  // Its spec.volumes volume is on the lost worker's disk: out of reach, not resumed; one on another node is no obstacle.
  const withVolume = await execution('w-vol', 'running');
  const volume = (node: string, ref: string) =>
    db.query(
      `INSERT INTO volumes (id, tenant_id, label, storage_class, size_limit_bytes, owner_subject, owner_kind, owner_ref, node_id, status)
       VALUES ($1, 't-loss', 'data', 'ephemeral', 1024, 'agent:a', 'execution', $2, $3, 'active')`,
      [randomUUID(), ref, node],
    );
  await volume('w-vol', withVolume);
  t.is(await handleWorkerLost(s, withVolume, 'w-vol', 'ctl-1', 30_000, survivors(true, 3)), 'failed');
  const elsewhere = await execution('w-vol2', 'running');
  await volume('ctl-1', elsewhere);
  t.is(await handleWorkerLost(s, elsewhere, 'w-vol2', 'ctl-1', 30_000, survivors(true, 3)), 'resumed');
});
