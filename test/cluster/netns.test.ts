// A network cut between real processes (issue 7, acceptance line 3). Each node has its own address: the controller
// (`orch up`, role controller) binds the address of a Linux bridge in the host namespace, and two workers run with
// `ip netns exec` in their own network namespaces, each joined to the bridge by a veth pair (test/cluster/netlab.ts).
// PostgreSQL and the scripted model listen on the host's loopback only, which a namespace cannot see, so the workers
// reach them through TCP forwarders on the bridge address — the cut takes those away too, as a real cut would.
// Shown: both workers join and advertise their namespace addresses (one binds that address, the other 0.0.0.0 with
// spec.cluster.advertise_address); with one worker's bridge port down (checked: its address stops answering) the
// controller marks it UNHEALTHY and routes new executions to the other; with the port back up, the SAME worker
// process (same pid, never exited) becomes ACTIVE again and is routed to again.
// Needs root: where network namespaces are not permitted the test fails, naming the reason (never skipped).
import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { openDb } from '../../src/storage/open.ts';
import { createTestDatabase, type TestDatabase } from '../support/pg.ts';
import { eventually, startOrchNode, type NodeProcess } from '../support/node-process.ts';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm.ts';
import { createNetLab, probeNetns, type LabNode, type NetLab } from './netlab.ts';
import { api, type Api } from './support.ts';

const TITLE = 'workers in their own network namespaces: a cut worker turns UNHEALTHY, work goes to the other, and it rejoins without a restart';

const agentYaml = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: netns-plain, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer in one word. }
  execution: { mode: one-shot, max_iterations: 1, llm_timeout_seconds: 120, iteration_timeout: 120, validation: [] }
  security: { resources: { timeout: 300 } }
`;

interface NodeJson {
  node_id: string;
  status: string;
  grpc_address: string | null;
  heartbeat_count: number;
}

// Torn down in after.always in dependency order (processes before the namespaces they live in), even on failure.
const cleanup: { processes: NodeProcess[]; lab?: NetLab; llm?: ScriptedLlm; db?: Db; database?: TestDatabase; dir?: string } = { processes: [] };

test.after.always(async () => {
  await Promise.all(
    cleanup.processes.map(async (p) => {
      if (p.child.exitCode === null && p.child.signalCode === null) await p.kill('SIGKILL');
    }),
  );
  await cleanup.lab?.destroy();
  await cleanup.llm?.close();
  await cleanup.db?.close();
  await cleanup.database?.drop();
  if (cleanup.dir) await rm(cleanup.dir, { recursive: true, force: true });
});

/** Whether a TCP connection to `address` is accepted within `ms`. */
function connects(address: string, ms: number): Promise<boolean> {
  const sep = address.lastIndexOf(':');
  return new Promise((resolve) => {
    const s = net.connect(Number(address.slice(sep + 1)), address.slice(0, sep));
    const finish = (ok: boolean): void => {
      clearTimeout(timer);
      s.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => finish(false), ms);
    s.once('connect', () => finish(true));
    s.once('error', () => finish(false));
  });
}

const unavailable = probeNetns();

if (unavailable) {
  // Never skipped: a machine that cannot make namespaces fails this test with the reason (CI runs as root).
  test(TITLE, (t) => {
    t.fail(`network namespaces are not permitted on this machine (${unavailable}); this test needs root (CAP_NET_ADMIN)`);
  });
} else {
  test.serial(TITLE, async (t) => {
    t.timeout(6 * 60_000);
    const llm = (cleanup.llm = await startScriptedLlm(() => ({ content: 'done' })));
    const database = (cleanup.database = await createTestDatabase({ migrated: true }));
    const dir = (cleanup.dir = await mkdtemp(path.join(os.tmpdir(), 'orch-netns-')));
    const db = (cleanup.db = await openDb({ url: database.url, dataDir: dir }, silentLogger()));
    const lab = (cleanup.lab = await createNetLab());
    t.log(`lab subnet ${lab.subnet}.0/24, controller at ${lab.hostAddress}`);

    // What a namespace dials instead of the host's loopback.
    const dbUrl = new URL(database.url);
    const dbForward = await lab.forward(`${dbUrl.hostname}:${dbUrl.port || '5432'}`);
    const workerDbUrl = new URL(database.url);
    workerDbUrl.host = dbForward;
    const llmUrl = new URL(llm.url);
    llmUrl.host = await lab.forward(llmUrl.host);

    const sfx = Math.random().toString(36).slice(2, 7);
    const start = async (name: string, body: string, env: Record<string, string | undefined>, wrap: string[] = []): Promise<NodeProcess> => {
      const file = path.join(dir, `${name}.yaml`);
      await writeFile(file, `apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: ${name} }\nspec:\n${body}`);
      const node = await startOrchNode({ ORCH_CONFIG: file, ORCH_DATA_DIR: path.join(dir, name), REDIS_URL: undefined, ...env }, [], 90_000, wrap);
      cleanup.processes.push(node);
      return node;
    };
    const cluster = '  cluster: { heartbeat_interval_seconds: 1, missed_heartbeats: 3 }\n';
    const ctlId = `ctl-${sfx}`;
    const ctl = await start(ctlId, `  node: { id: ${ctlId}, role: controller }\n${cluster}`, { DATABASE_URL: database.url, ORCH_HTTP_BIND: lab.hostAddress });
    t.is(ctl.banner.cluster?.split(':')[0], lab.hostAddress, 'the controller serves on the bridge address');
    const C: Api = { http: ctl.banner.http, token: ctl.banner.dev_token ?? '' };

    const labNodes: LabNode[] = [await lab.addNode(), await lab.addNode()];
    const ids = [`wa-${sfx}`, `wb-${sfx}`] as const;
    const workers: NodeProcess[] = [];
    // The first worker binds its namespace address; the second binds every address (0.0.0.0), whose host name is
    // the host's, not the namespace's, and says which address to advertise (spec.cluster.advertise_address).
    for (const [i, id] of ids.entries()) {
      const advertise = i === 1 ? `, advertise_address: "${labNodes[i]!.address}"` : '';
      const body =
        `  node: { id: ${id}, role: worker }\n` +
        `  cluster: { controller: "${ctl.banner.cluster}", heartbeat_interval_seconds: 1, missed_heartbeats: 3${advertise} }\n` +
        `  llm_providers:\n    - { name: scripted, type: openai, endpoint: "${llmUrl.toString()}", api_key: test-key, models: [ { alias: default, model: scripted-1 } ] }\n` +
        '  runtime: { default_isolation: process }\n';
      workers.push(await start(id, body, { DATABASE_URL: workerDbUrl.toString(), ORCH_HTTP_BIND: i === 1 ? '0.0.0.0' : labNodes[i]!.address }, labNodes[i]!.exec));
    }
    const cutNode = labNodes[0]!;
    const [cutId, keptId] = ids;
    const cutWorker = workers[0]!;
    const diag = (): string =>
      `\ncontroller:\n${ctl.stderr().slice(-1500)}\n${cutId}:\n${cutWorker.stderr().slice(-2500)}\n${keptId}:\n${workers[1]!.stderr().slice(-1000)}`;

    const nodes = async (): Promise<NodeJson[]> => {
      const r = await api<{ nodes: NodeJson[] }>(C, 'GET', '/v1/cluster/nodes');
      if (r.status !== 200) throw new Error(`GET /v1/cluster/nodes: ${r.status}`);
      return r.body.nodes;
    };
    const statusOf = async (id: string): Promise<string | undefined> => (await nodes()).find((n) => n.node_id === id)?.status;
    const joined = await eventually(async () => {
      const ns = (await nodes()).filter((n) => (ids as readonly string[]).includes(n.node_id) && n.status === 'ACTIVE');
      return ns.length === 2 ? ns : undefined;
    }, 60_000, `both workers ACTIVE${diag()}`);
    for (const [i, id] of ids.entries()) {
      const address = joined.find((n) => n.node_id === id)?.grpc_address ?? '';
      t.is(address.split(':')[0], labNodes[i]!.address, `${id} advertises its namespace address`);
    }

    const created = await api(C, 'POST', '/v1/agents', { manifest_yaml: agentYaml });
    t.is(created.status, 201, JSON.stringify(created.body));
    const agentId = (await api<{ agent_id: string }>(C, 'GET', '/v1/agents/lookup/netns-plain')).body.agent_id;
    const owner = async (id: string): Promise<string | null> =>
      (await db.query<{ owner_node: string | null }>('SELECT owner_node FROM executions WHERE id = $1', [id])).rows[0]?.owner_node ?? null;
    /** Runs one execution to its end through the controller; answers the worker that ran it. */
    const runOne = async (input: string): Promise<string> => {
      const r = await api<{ execution_id: string }>(C, 'POST', '/v1/executions', { agent_id: agentId, input });
      t.is(r.status, 200, JSON.stringify(r.body));
      const id = r.body.execution_id;
      const done = await eventually(async () => {
        const d = await api<{ status: string; reason: string | null }>(C, 'GET', `/v1/executions/${id}`);
        return ['completed', 'failed', 'cancelled'].includes(d.body.status) ? d.body : undefined;
      }, 90_000, `execution ${id} to finish${diag()}`);
      t.is(done.status, 'completed', `${input}: ${done.reason ?? ''}`);
      return (await owner(id)) ?? '';
    };

    // Both workers are reachable at their namespace addresses: the rotation gives each one some work.
    const before: string[] = [];
    for (let i = 0; i < 4; i++) before.push(await runOne(`before-${i}`));
    t.true(ids.every((id) => before.includes(id)), `both workers ran executions: ${before.join(', ')}`);

    // The cut. The worker's HTTP address stops answering from the host: the traffic really is cut.
    const pid = cutWorker.child.pid;
    const workerHttp = `${cutNode.address}:${new URL(cutWorker.banner.http).port}`;
    t.true(await connects(workerHttp, 10_000), 'the worker answers before the cut');
    await lab.cut(cutNode);
    const cutAt = Date.now();
    t.false(await connects(workerHttp, 3000), 'the worker does not answer during the cut');
    await eventually(async () => ((await statusOf(cutId)) === 'UNHEALTHY' ? true : undefined), 30_000, `${cutId} UNHEALTHY${diag()}`);
    t.is(await statusOf(keptId), 'ACTIVE', 'the other worker stays ACTIVE');
    const during: string[] = [];
    for (let i = 0; i < 3; i++) during.push(await runOne(`during-${i}`));
    t.deepEqual(during, [keptId, keptId, keptId], 'new executions go to the reachable worker');
    t.is(await statusOf(cutId), 'UNHEALTHY', 'still UNHEALTHY while cut');

    // The link returns: the same process (never exited, same pid) heartbeats again and is ACTIVE.
    await lab.restore(cutNode);
    const restoredAt = Date.now();
    await eventually(async () => ((await statusOf(cutId)) === 'ACTIVE' ? true : undefined), 60_000, `${cutId} ACTIVE again${diag()}`);
    t.log(`cut for ${restoredAt - cutAt} ms; ACTIVE again ${Date.now() - restoredAt} ms after the link returned`);
    t.is(cutWorker.child.pid, pid);
    t.is(cutWorker.child.exitCode, null, 'the worker never exited');
    t.is(cutWorker.child.signalCode, null);
    t.is((cutWorker.stderr().match(/"node started"/g) ?? []).length, 1, 'the worker started once');
    const after: string[] = [];
    for (let i = 0; i < 4; i++) after.push(await runOne(`after-${i}`));
    t.true(after.includes(cutId), `the rejoined worker is routed to again: ${after.join(', ')}`);
    t.true(await connects(workerHttp, 10_000), 'the worker answers again');

    const running = await db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM executions WHERE status IN ('pending', 'running')`);
    t.is(running.rows[0]!.n, 0, 'nothing stays running');
  });
}
