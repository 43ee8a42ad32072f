// The compose cluster's checks (issue 17), run by scripts/compose-smoke.sh: docker-compose.cluster.yml with
// docker-compose.postgres.yml (two controllers, two workers, PostgreSQL, Redis) brought up with Debian's
// podman-compose, the identity provider's JWKS and a scripted OpenAI-compatible LLM served from the host. Checks:
// both controllers healthy; an agent execution routed to a worker container and completed; a workflow's Human
// approval approved through the other controller; a controller container killed and the work going on; `down` then
// `up` keeping the data. Prints each step's time (docs/BENCHMARKS.md "Compose cluster") and exits 0 when all held.
//
//   node --import tsx scripts/smoke/compose.ts        (after the images exist: scripts/compose-smoke.sh)
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer as netServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeTestIdp } from '../../test/support/jwks.ts';
import { startScriptedLlm } from '../../test/support/scripted-llm.ts';
import { http, podman, Report, run, until } from './support.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PROJECT = process.env.ORCH_COMPOSE_PROJECT ?? 'orchsmoke';
const WORK = path.join(ROOT, '.orch', 'compose-smoke');
const FLAT = path.join(WORK, 'compose.yml');

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: answerer, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer in one word. }
  execution: { mode: one-shot, max_iterations: 1, llm_timeout_seconds: 60, iteration_timeout: 60, validation: [] }
  security: { resources: { timeout: 120 } }
`;

const GATED = `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: gated, version: 1.0.0 }
spec:
  initial_state: ask
  states:
    ask:
      kind: Agent
      agent: answerer
      input: 'Say something about {{input.topic}}'
      transitions: [ { target: gate } ]
    gate:
      kind: Human
      prompt: 'Ship {{input.topic}}?'
      transitions:
        - { condition: input_equals_yes, target: shipped }
        - { condition: input_equals_no, target: held }
    shipped:
      kind: System
      command: 'update_blackboard {"shipped": true, "by": {{json human.feedback}} }'
      transitions: []
    held:
      kind: System
      command: 'update_blackboard {"shipped": false}'
      transitions: []
`;

async function freePort(): Promise<number> {
  const s = netServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function serveJwks(jwks: unknown): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    res.writeHead(req.url === '/jwks.json' ? 200 : 404, { 'content-type': 'application/json' });
    res.end(req.url === '/jwks.json' ? JSON.stringify(jwks) : '{}');
  });
  await new Promise<void>((r) => server.listen(0, '0.0.0.0', () => r()));
  return { server, port: (server.address() as { port: number }).port };
}

function compose(env: NodeJS.ProcessEnv, ...args: string[]): Promise<string> {
  return run('podman-compose', ['-p', PROJECT, '-f', FLAT, ...args], { env, timeoutMs: 600_000, cwd: ROOT });
}

const container = (service: string): string => `${PROJECT}_${service}_1`;

async function psql(sql: string): Promise<string[][]> {
  const out = await podman('exec', container('postgres'), 'psql', '-U', 'postgres', '-d', 'orch', '-At', '-F', '\t', '-c', sql);
  return out.trim() === '' ? [] : out.trim().split('\n').map((l) => l.split('\t'));
}

interface Execution {
  status: string;
  reason?: string;
  final_output?: unknown;
}
interface Run {
  status: string;
  current_state?: string;
  blackboard: Record<string, unknown>;
  error?: string;
}

async function main(): Promise<void> {
  const report = new Report('compose smoke (2 controllers, 2 workers, PostgreSQL, Redis; podman-compose)');
  const times: Record<string, number> = {};
  await mkdir(WORK, { recursive: true });
  const idp = await makeTestIdp();
  const jwks = await serveJwks(idp.jwks);
  const llm = await startScriptedLlm(async () => ({ content: 'forty-two' }), { host: '0.0.0.0' });
  const token = await idp.sign({ sub: 'smoke', preferred_username: 'smoke', tenant_id: 'acme', realm_access: { roles: ['tenant-admin', 'operator'] } }, { ttlSeconds: 4 * 3600 });
  const ports = { c1: await freePort(), c2: await freePort(), g1: await freePort(), g2: await freePort() };
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ORCH_IMAGE: process.env.ORCH_IMAGE ?? 'localhost/orch:latest',
    ORCH_POSTGRES_IMAGE: 'localhost/orch-postgres:15',
    ORCH_REDIS_IMAGE: 'localhost/orch-redis:7',
    ORCH_JWKS_URL: `http://host.containers.internal:${jwks.port}/jwks.json`,
    ORCH_AUTH_ISSUER: idp.issuer,
    ORCH_CLUSTER_JOIN_TOKEN: randomBytes(32).toString('hex'),
    OPENAI_BASE_URL: `http://host.containers.internal:${new URL(llm.url).port}/v1`,
    OPENAI_API_KEY: 'smoke',
    ORCH_DEFAULT_MODEL: 'scripted',
    ORCH_CONTROLLER_1_HTTP_PORT: String(ports.c1),
    ORCH_CONTROLLER_2_HTTP_PORT: String(ports.c2),
    ORCH_CONTROLLER_1_GRPC_PORT: String(ports.g1),
    ORCH_CONTROLLER_2_GRPC_PORT: String(ports.g2),
  };
  const C1 = `http://127.0.0.1:${ports.c1}`;
  const C2 = `http://127.0.0.1:${ports.c2}`;
  const api = (base: string, p: string, body?: unknown, yaml?: string) =>
    http(base, p, { token, ...(body !== undefined ? { body } : {}), ...(yaml !== undefined ? { yaml } : {}) });
  const healthy = (base: string) => until(async () => ((await http(base, '/health/ready', { timeoutMs: 3000 })).status === 200 ? true : undefined), 300_000, `${base} /health/ready`, 1000);
  const workersActive = () =>
    until(async () => {
      const r = (await api(C1, '/v1/cluster/nodes')).json as { nodes?: { node_id: string; status: string }[] };
      const active = (r.nodes ?? []).filter((n) => n.node_id.startsWith('worker-') && n.status === 'ACTIVE').map((n) => n.node_id).sort();
      return active.length === 2 ? active : undefined;
    }, 300_000, 'worker-1 and worker-2 ACTIVE', 1000);
  let agentId = '';
  const execute = async (base: string): Promise<{ id: string; e: Execution }> => {
    const s = await api(base, '/v1/executions', { agent_id: agentId, input: 'hello' });
    const id = (s.json as { execution_id?: string }).execution_id;
    if (!id) throw new Error(`execute: ${s.status} ${s.text}`);
    const e = await until(async () => {
      const x = (await api(base, `/v1/executions/${id}`)).json as Execution;
      return x.status === 'completed' || x.status === 'failed' ? x : undefined;
    }, 180_000, `execution ${id} to end`, 500);
    return { id, e };
  };
  const runStatus = (base: string, id: string) => api(base, `/v1/workflows/executions/${id}`).then((r) => r.json as Run);
  const waitRun = (base: string, id: string, want: (r: Run) => boolean, what: string, ms = 180_000) =>
    until(async () => { const r = await runStatus(base, id); return want(r) ? r : undefined; }, ms, what, 500);
  const approveVia = async (base: string, runId: string, feedback: string): Promise<void> => {
    const list = (await api(base, '/v1/human-approvals')).json as { pending_requests?: { id: string; execution_id: string }[] };
    const req = (list.pending_requests ?? []).find((r) => r.execution_id === runId);
    if (!req) throw new Error(`no pending request for ${runId} at ${base}: ${JSON.stringify(list)}`);
    const a = await api(base, `/v1/human-approvals/${req.id}/approve`, { feedback, approved_by: 'smoke' });
    if (a.status !== 200) throw new Error(`approve: ${a.status} ${a.text}`);
  };

  let ok = false;
  const ids: { execution?: string; run1?: string; run2?: string } = {};
  try {
    await run('node', ['scripts/compose-flatten.mjs', '-f', 'docker-compose.cluster.yml', '-f', 'docker-compose.postgres.yml', '-o', FLAT], { cwd: ROOT });
    await compose(env, 'down', '-v').catch(() => '');
    let t0 = Date.now();
    await report.check('podman-compose up: both controllers healthy', async () => {
      await compose(env, 'up', '-d');
      await Promise.all([healthy(C1), healthy(C2)]);
      // The compose healthcheck command itself passes (retried: on a loaded host one probe may exceed its timeout).
      for (const c of ['controller-1', 'controller-2']) await until(() => podman('healthcheck', 'run', container(c)).then(() => true), 60_000, `${c}'s healthcheck`, 2000);
      times.up_to_controllers_healthy_s = (Date.now() - t0) / 1000;
    }, () => `${times.up_to_controllers_healthy_s} s from up (the compose healthcheck command passes in both)`);
    await report.check('both workers joined and ACTIVE', async () => {
      const w = await workersActive();
      times.up_to_workers_active_s = (Date.now() - t0) / 1000;
      return w;
    }, (w) => `${w?.join(', ')} after ${times.up_to_workers_active_s} s`);

    await report.check('an agent execution is routed to a worker container and completes', async () => {
      const dep = await api(C1, '/v1/agents', undefined, AGENT);
      if (dep.status !== 201) throw new Error(`deploy agent: ${dep.status} ${dep.text}`);
      agentId = (dep.json as { agent_id: string }).agent_id;
      const t = Date.now();
      const { id, e } = await execute(C1);
      times.agent_execution_s = (Date.now() - t) / 1000;
      if (e.status !== 'completed') throw new Error(`execution ${e.status}: ${e.reason ?? ''}`);
      const owner = (await psql(`SELECT owner_node FROM executions WHERE id = '${id}'`))[0]?.[0] ?? '';
      if (!/^worker-[12]$/.test(owner)) throw new Error(`ran on ${owner}`);
      ids.execution = id;
      return owner;
    }, (owner) => `on ${owner} in ${times.agent_execution_s} s`);

    await report.check('a workflow started on controller-1 is approved through controller-2 and completes', async () => {
      const dep = await api(C1, '/v1/workflows', undefined, GATED);
      if (dep.status !== 201) throw new Error(`deploy workflow: ${dep.status} ${dep.text}`);
      const t = Date.now();
      const r = await api(C1, '/v1/workflows/gated/run', { input: { topic: 'v1' } });
      const id = (r.json as { execution_id?: string }).execution_id;
      if (!id) throw new Error(`run: ${r.status} ${r.text}`);
      await waitRun(C1, id, (x) => x.status === 'waiting_for_human_input', 'the Human state');
      await approveVia(C2, id, 'via controller-2');
      const done = await waitRun(C1, id, (x) => ['completed', 'failed', 'cancelled'].includes(x.status), 'the run to end');
      times.workflow_with_approval_s = (Date.now() - t) / 1000;
      if (done.status !== 'completed' || done.blackboard.shipped !== true || done.blackboard.by !== 'via controller-2') throw new Error(JSON.stringify(done));
      ids.run1 = id;
    }, () => `${times.workflow_with_approval_s} s (agent state, approval, completion)`);

    await report.check('kill the controller that holds a waiting run: the other takes it over and the work goes on', async () => {
      const r = await api(C1, '/v1/workflows/gated/run', { input: { topic: 'v2' } });
      const id = (r.json as { execution_id?: string }).execution_id;
      if (!id) throw new Error(`run: ${r.status} ${r.text}`);
      await waitRun(C1, id, (x) => x.status === 'waiting_for_human_input', 'the Human state');
      const owner = (await psql(`SELECT owner_node FROM workflow_executions WHERE id = '${id}'`))[0]?.[0] ?? 'controller-1';
      const victim = owner === 'controller-2' ? 'controller-2' : 'controller-1';
      const survivor = victim === 'controller-1' ? C2 : C1;
      const killedAt = Date.now();
      await podman('kill', container(victim));
      // restart: unless-stopped would bring it back at once; hold it down so the survivor has to take over.
      await podman('stop', '-t', '0', container(victim)).catch(() => '');
      await approveVia(survivor, id, 'after the kill');
      const done = await waitRun(survivor, id, (x) => ['completed', 'failed', 'cancelled'].includes(x.status), 'the run to end on the survivor');
      times.kill_to_run_completed_s = (Date.now() - killedAt) / 1000;
      if (done.status !== 'completed' || done.blackboard.by !== 'after the kill') throw new Error(JSON.stringify(done));
      const newOwner = (await psql(`SELECT owner_node FROM workflow_executions WHERE id = '${id}'`))[0]?.[0] ?? '';
      const t = Date.now();
      const { e } = await execute(survivor);
      times.agent_execution_after_kill_s = (Date.now() - t) / 1000;
      if (e.status !== 'completed') throw new Error(`execution after the kill: ${e.status} ${e.reason ?? ''}`);
      ids.run2 = id;
      await podman('start', container(victim));
      await healthy(victim === 'controller-1' ? C1 : C2);
      return { victim, owner, newOwner };
    }, (v) => `killed ${v?.victim} (lease owner ${v?.owner}); run completed ${times.kill_to_run_completed_s} s after the kill (owner now ${v?.newOwner}); a new agent execution completed in ${times.agent_execution_after_kill_s} s`);

    await report.check('down, then up: agents, executions and runs are still there', async () => {
      t0 = Date.now();
      await compose(env, 'down');
      times.down_s = (Date.now() - t0) / 1000;
      t0 = Date.now();
      await compose(env, 'up', '-d');
      await Promise.all([healthy(C1), healthy(C2)]);
      times.up_again_to_healthy_s = (Date.now() - t0) / 1000;
      const agents = (await api(C2, '/v1/agents')).text;
      if (!/answerer/.test(agents)) throw new Error(`agents after up: ${agents.slice(0, 300)}`);
      const e = (await api(C2, `/v1/executions/${ids.execution}`)).json as Execution;
      if (e.status !== 'completed') throw new Error(`execution after up: ${JSON.stringify(e)}`);
      for (const id of [ids.run1, ids.run2]) {
        const x = await runStatus(C2, id!);
        if (x.status !== 'completed') throw new Error(`run ${id} after up: ${JSON.stringify(x)}`);
      }
      await workersActive();
      const { e: again } = await execute(C2);
      if (again.status !== 'completed') throw new Error(`execution after up: ${again.status} ${again.reason ?? ''}`);
    }, () => `down ${times.down_s} s, up to healthy ${times.up_again_to_healthy_s} s; a new execution completed`);
    ok = report.ok;
  } finally {
    if (!ok) {
      for (const s of ['controller-1', 'controller-2', 'worker-1', 'worker-2']) {
        const logs = await podman('logs', '--tail', '25', container(s)).catch(() => '');
        process.stdout.write(`--- last log lines of ${s}\n${logs}\n`);
      }
    }
    if (!process.env.ORCH_COMPOSE_KEEP) await compose(env, 'down', '-v').catch((err: unknown) => process.stdout.write(`down -v failed: ${(err as Error).message}\n`));
    await llm.close();
    await new Promise((r) => jwks.server.close(r));
  }
  process.stdout.write(`times: ${JSON.stringify(times)}\n`);
  await writeFile(path.join(WORK, 'times.json'), JSON.stringify(times, null, 2));
  process.stdout.write(`${report.summary()}\n`);
  process.exitCode = report.ok ? 0 : 1;
}

await main();
