// Real processes on loopback: `orch up --role controller` and `orch up --role worker` on one PostgreSQL database.
// The worker attests and registers through the cluster protocol and shows ACTIVE in GET /v1/cluster/nodes and
// `orch node ls`; stopped (SIGSTOP) it misses its 1 s heartbeats and turns UNHEALTHY, resumed (SIGCONT) it is
// ACTIVE again; `orch node drain` (operator only) marks it DRAINING and the worker is told; SIGTERM deregisters it.
import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { openDb } from '../../src/storage/open.ts';
import { createTestDatabase } from '../support/pg.ts';
import { eventually, runOrch, startOrchNode, type NodeProcess } from '../support/node-process.ts';

interface NodeJson {
  node_id: string;
  role: string;
  status: string;
  load: { active_execution_count?: number; cpu_utilization_percent?: number } | null;
  last_heartbeat_at: string | null;
  heartbeat_count: number;
  drained: boolean;
}

async function config(dir: string, name: string, body: string): Promise<string> {
  const file = path.join(dir, `${name}.yaml`);
  await writeFile(file, `apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: ${name} }\nspec:\n${body}`);
  return file;
}

test('a worker process joins a controller process, turns UNHEALTHY when silent and ACTIVE when back, and is drained over HTTP', async (t) => {
  t.timeout(6 * 60_000);
  const database = await createTestDatabase({ migrated: true });
  t.teardown(() => database.drop());
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-cluster-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const db = await openDb({ url: database.url, dataDir: dir }, silentLogger());
  t.teardown(() => db.close());
  const suffix = Math.random().toString(36).slice(2, 8);
  const ctlId = `ctl-${suffix}`;
  const workerId = `wrk-${suffix}`;
  const cluster = '  cluster: { heartbeat_interval_seconds: 1, missed_heartbeats: 3 }\n';
  const ctlConfig = await config(dir, ctlId, `  node: { id: ${ctlId}, role: controller }\n${cluster}`);
  const common = { DATABASE_URL: database.url, REDIS_URL: undefined };
  const controller = await startOrchNode({ ...common, ORCH_CONFIG: ctlConfig, ORCH_DATA_DIR: path.join(dir, 'ctl') });
  t.teardown(() => controller.child.kill('SIGKILL'));
  t.truthy(controller.banner.cluster);
  const workerConfig = await config(
    dir,
    workerId,
    `  node: { id: ${workerId}, role: worker, tags: [blue] }\n  cluster: { heartbeat_interval_seconds: 1, missed_heartbeats: 3, controller: "${controller.banner.cluster}" }\n`,
  );
  const worker: NodeProcess = await startOrchNode({ ...common, ORCH_CONFIG: workerConfig, ORCH_DATA_DIR: path.join(dir, 'wrk') });
  t.teardown(() => {
    worker.child.kill('SIGCONT');
    worker.child.kill('SIGKILL');
  });
  const token = controller.banner.dev_token!;
  const nodes = async (): Promise<NodeJson[]> => {
    const res = await fetch(`${controller.banner.http}/v1/cluster/nodes`, { headers: { authorization: `Bearer ${token}` } });
    if (!res.ok) throw new Error(`GET /v1/cluster/nodes: ${res.status}`);
    return ((await res.json()) as { nodes: NodeJson[] }).nodes;
  };
  const member = async (): Promise<NodeJson | undefined> => (await nodes()).find((n) => n.node_id === workerId);
  const diag = (): string => `\ncontroller:\n${controller.stderr().slice(-1500)}\nworker:\n${worker.stderr().slice(-1500)}`;

  // Joined: ACTIVE, role worker, load and heartbeats from the worker.
  const joined = await eventually(async () => {
    const n = await member();
    return n && n.status === 'ACTIVE' && n.heartbeat_count >= 2 ? n : undefined;
  }, 60_000, `worker ACTIVE with heartbeats${diag()}`);
  t.is(joined.role, 'worker');
  t.is(typeof joined.load?.active_execution_count, 'number');
  t.truthy(joined.last_heartbeat_at);
  const env = { ORCH_URL: controller.banner.http, ORCH_TOKEN: token };
  const ls = await runOrch(['--json', 'node', 'ls'], env);
  t.is(ls.code, 0, ls.stderr);
  const listed = (JSON.parse(ls.stdout) as { nodes: NodeJson[] }).nodes.find((n) => n.node_id === workerId);
  t.is(listed?.status, 'ACTIVE');
  const table = await runOrch(['node', 'ls'], env);
  t.regex(table.stdout, new RegExp(`${workerId}\\s+worker\\s+ACTIVE`));

  // Silent: SIGSTOP freezes the worker; three missed 1 s heartbeats make it UNHEALTHY.
  worker.child.kill('SIGSTOP');
  const stoppedAt = Date.now();
  await eventually(async () => ((await member())?.status === 'UNHEALTHY' ? true : undefined), 60_000, `UNHEALTHY${diag()}`);
  // The bound is on when the controller wrote UNHEALTHY (the row's updated_at, written with the status; nothing else
  // writes the row of a frozen worker), not on when this test's polling saw it: under load that adds seconds.
  const marked = (await db.query<{ status: string; updated_at: Date }>('SELECT status, updated_at FROM cluster_nodes WHERE node_id = $1', [workerId])).rows[0]!;
  t.is(marked.status, 'UNHEALTHY');
  const detected = marked.updated_at.getTime() - stoppedAt;
  t.true(detected < 6000, `UNHEALTHY after ${detected} ms`);
  t.log(`worker frozen: UNHEALTHY recorded ${detected} ms after SIGSTOP (seen after ${Date.now() - stoppedAt} ms)`);
  worker.child.kill('SIGCONT');
  await eventually(async () => ((await member())?.status === 'ACTIVE' ? true : undefined), 60_000, `ACTIVE again${diag()}`);

  // Drain: a user may not, an operator may; the worker hears it on its next heartbeat.
  const user = await runOrch(['token', '--role', 'user'], { ORCH_DATA_DIR: path.join(dir, 'ctl'), ORCH_CONFIG: ctlConfig });
  t.is(user.code, 0, user.stderr);
  const denied = await runOrch(['node', 'drain', workerId], { ...env, ORCH_TOKEN: user.stdout.trim() });
  t.not(denied.code, 0);
  t.regex(denied.stderr, /403/);
  const drain = await runOrch(['--json', 'node', 'drain', workerId, '--reason', 'maintenance'], env);
  t.is(drain.code, 0, drain.stderr);
  t.like(JSON.parse(drain.stdout), { node_id: workerId, status: 'DRAINING', already_draining: false });
  t.is((await member())?.status, 'DRAINING');
  await eventually(async () => (/drain command/.test(worker.stderr()) ? true : undefined), 60_000, `the worker to be told${diag()}`);
  const drained = await eventually(async () => {
    const n = await member();
    return n?.drained ? n : undefined;
  }, 60_000, 'drained');
  t.is(drained.status, 'DRAINING');

  // SIGTERM: graceful stop deregisters the worker.
  t.is(await worker.kill('SIGTERM'), 0, diag());
  await eventually(async () => {
    const res = await fetch(`${controller.banner.http}/v1/cluster/nodes?status=DEREGISTERED`, { headers: { authorization: `Bearer ${token}` } });
    const list = ((await res.json()) as { nodes: NodeJson[] }).nodes;
    return list.some((n) => n.node_id === workerId) ? true : undefined;
  }, 60_000, 'DEREGISTERED');
  t.is(await controller.kill('SIGTERM'), 0, diag());
});
