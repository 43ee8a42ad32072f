// The attacks of issue 14 replayed as they were made, against a real `orch up` over PostgreSQL whose environment
// holds secrets (WEBHOOK_SECRET, OPENAI_API_KEY, the GitHub webhook secret):
//   a. a `user` of tenant globex deploys (POST /v1/workflows) and runs a workflow whose System state prints `id`
//      and greps /proc/$PPID/environ for the secrets: it runs as uid 65534 and sees neither secret;
//   b. a System state reads <data_dir>/volumes/<tenant acme's volume>/secret.txt: nothing;
//   c. a correctly signed POST /v1/webhooks/github whose title is `x; echo INJECTED uid=$(id -u) > FILE` reaches a
//      System state `echo title={{input.data.title}}`: the title is echoed, FILE is created nowhere;
//   d. a node whose bwrap binary is missing (runtime.bwrap_path): the state fails naming the sandbox, the command
//      never runs on the host.
//   e. a node with runtime.system_state_network: the state has network, but its own namespace: PostgreSQL, Redis and
//      the node's own HTTP port on the host's 127.0.0.1 do not answer it (they did: it shared the host's namespace).
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ensureDevIdentity, type DevIdentity } from '../../src/auth/dev-identity.ts';
import { signWebhook } from '../../src/stimuli/signature.ts';
import { eventually, type NodeProcess } from '../support/node-process.ts';
import { nodeStarter, scratch, type Scratch } from '../cluster/processes.ts';

const secrets = {
  WEBHOOK_SECRET: `whsec-${randomBytes(12).toString('hex')}`,
  OPENAI_API_KEY: `sk-${randomBytes(12).toString('hex')}`,
  ORCH_WEBHOOK_SECRET_GITHUB: `gh-${randomBytes(12).toString('hex')}`,
};

interface Running {
  node: NodeProcess;
  dataDir: string;
  identity: DevIdentity;
}

async function start(t: Parameters<typeof scratch>[0], name: string, runtime: string): Promise<Running & { s: Scratch }> {
  const s = await scratch(t, `orch-sbx-${name}-`);
  const node = await nodeStarter(t, s, { env: secrets })(name, `  node: { id: ${name}-${randomBytes(3).toString('hex')} }
  http: { bind: 127.0.0.1, port: 0 }
  grpc: { port: 0 }
  cluster: { cluster_grpc_port: 0 }
  runtime: ${runtime}
  stimuli:
    routes:
      - { source: github, workflow: hook }
`);
  const dataDir = path.join(s.dir, name);
  return { s, node, dataDir, identity: await ensureDevIdentity(dataDir) };
}

async function api<T = Record<string, unknown>>(n: Running, method: string, url: string, token: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: T }> {
  const res = await fetch(`${n.node.banner.http}${url}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined && typeof body !== 'string' ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as T };
}

interface Execution {
  status: string;
  error: string | null;
  blackboard: Record<string, { status: string; output: { stdout: string; stderr: string; exit_code: number } }>;
}

async function finished(n: Running, id: string, token: string): Promise<Execution> {
  return eventually(async () => {
    const r = await api<Execution>(n, 'GET', `/v1/workflows/executions/${id}`, token);
    return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
  }, 120_000, `workflow execution ${id} to end`);
}

const wf = (name: string, command: string): string => `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: ${name}, version: 1.0.0 }
spec:
  initial_state: run
  states:
    run:
      kind: System
      command: ${JSON.stringify(command)}
      transitions: []
`;

async function deployAndRun(n: Running, token: string, name: string, command: string): Promise<Execution> {
  const deployed = await api(n, 'POST', '/v1/workflows', token, { manifest_yaml: wf(name, command) });
  if (deployed.status !== 201) throw new Error(`deploy ${name}: ${deployed.status} ${JSON.stringify(deployed.body)}`);
  const run = await api<{ execution_id: string }>(n, 'POST', `/v1/workflows/${name}/run`, token, {});
  if (run.status !== 201) throw new Error(`run ${name}: ${run.status} ${JSON.stringify(run.body)}`);
  return finished(n, run.body.execution_id, token);
}

test.serial('a, b, c: a tenant user gets no root, no node secret, no other tenant\'s volume; a webhook title is data', async (t) => {
  const n = await start(t, 'sbx', '{ default_isolation: process }');
  const globex = await n.identity.sign({ tenant: 'globex', role: 'user' });

  // a. The command of the attack, as a plain `user` of tenant globex.
  const leak = await deployAndRun(n, globex, 'leak', 'id; tr "\\0" "\\n" < /proc/$PPID/environ | grep -E "WEBHOOK_SECRET|OPENAI_API_KEY"');
  const out = leak.blackboard.run!.output;
  t.regex(out.stdout, /^uid=65534\b/, JSON.stringify(out));
  t.notRegex(out.stdout, /uid=0\b/);
  for (const value of Object.values(secrets)) {
    t.false(out.stdout.includes(value), 'a node secret reached the command');
    t.false(out.stderr.includes(value), 'a node secret reached the command');
  }
  t.false(/WEBHOOK_SECRET|OPENAI_API_KEY/.test(out.stdout), out.stdout);

  // b. Tenant acme's volume with a secret file; globex's System state reads it at its path in the data directory.
  const acme = await n.identity.sign({ tenant: 'acme', role: 'user' });
  const vol = await api<{ id: string }>(n, 'POST', '/v1/volumes', acme, { label: 'private', size_limit_bytes: 1_000_000 });
  t.is(vol.status, 201, JSON.stringify(vol.body));
  const secret = `acme-secret-${randomBytes(8).toString('hex')}`;
  const put = await api(n, 'PUT', `/v1/volumes/${vol.body.id}/files/content?path=/secret.txt`, acme, secret, { 'content-type': 'application/octet-stream' });
  t.is(put.status, 201, JSON.stringify(put.body));
  const file = path.join(n.dataDir, 'volumes', vol.body.id, 'secret.txt');
  t.true(existsSync(file), `the volume is at ${file} on the host`);
  const steal = await deployAndRun(n, globex, 'steal', `cat ${file}; ls ${n.dataDir} ${path.join(n.dataDir, 'volumes')}`);
  t.false(steal.blackboard.run!.output.stdout.includes(secret), JSON.stringify(steal.blackboard.run));
  t.is(steal.blackboard.run!.output.stdout, '');
  t.regex(steal.blackboard.run!.output.stderr, /No such file or directory/);

  // c. The injection through a correctly signed GitHub webhook (routed to `hook` in the webhook tenant).
  const home = await n.identity.sign({});
  const deployed = await api(n, 'POST', '/v1/workflows', home, { manifest_yaml: wf('hook', 'echo title={{input.data.title}}; ls -A') });
  t.is(deployed.status, 201, JSON.stringify(deployed.body));
  const hostDir = await mkdtemp(path.join(os.tmpdir(), 'orch-sbx-inj-'));
  t.teardown(() => rm(hostDir, { recursive: true, force: true }));
  for (const target of [path.join(hostDir, 'FILE'), 'FILE']) {
    const title = `x; echo INJECTED uid=$(id -u) > ${target}`;
    const body = JSON.stringify({ title });
    const res = await fetch(`${n.node.banner.http}/v1/webhooks/github`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-orch-signature': signWebhook(secrets.ORCH_WEBHOOK_SECRET_GITHUB, body) },
      body,
    });
    const routed = (await res.json()) as { workflow_execution_id: string };
    t.is(res.status, 200, JSON.stringify(routed));
    const run = await finished(n, routed.workflow_execution_id, home);
    t.is(run.status, 'completed', run.error ?? '');
    // `ls -A` of the workspace prints nothing after the title: no FILE there.
    t.is(run.blackboard.run!.output.stdout, `title=${title}\n`);
    t.false(existsSync(path.join(hostDir, 'FILE')), 'FILE was written on the host');
    const scratchDir = path.join(n.dataDir, 'workflow-scratch', routed.workflow_execution_id);
    t.deepEqual(await readdir(scratchDir).catch(() => []), [], 'FILE was written in the workspace');
  }
});

test.serial('d: with the bwrap binary missing the state fails naming the sandbox; nothing runs on the host', async (t) => {
  const missing = `/nonexistent-${randomBytes(4).toString('hex')}/bwrap`;
  const n = await start(t, 'nobwrap', `{ default_isolation: process, bwrap_path: ${missing} }`);
  const marker = path.join(os.tmpdir(), `orch-sbx-ran-${randomBytes(4).toString('hex')}`);
  t.teardown(() => rm(marker, { force: true }));
  const user = await n.identity.sign({ tenant: 'globex', role: 'user' });
  const run = await deployAndRun(n, user, 'nobwrap', `touch ${marker}; id`);
  // The state failed (the run itself completes: the state has no transitions).
  t.is(run.blackboard.run!.status, 'failed', JSON.stringify(run));
  const out = run.blackboard.run!.output;
  t.is(out.stdout, '');
  t.regex(out.stderr, /needs a sandbox and none could be made/);
  t.regex(out.stderr, new RegExp(`bubblewrap binary ${missing} does not exist`));
  t.false(existsSync(marker), 'the command ran on the host');
});

test.serial('e: System states with network (runtime.system_state_network) reach no host loopback service', async (t) => {
  const n = await start(t, 'sbxnet', '{ default_isolation: process, system_state_network: true }');
  const user = await n.identity.sign({ tenant: 'globex', role: 'user' });
  const own = new URL(n.node.banner.http);
  const targets = ['127.0.0.1:5432', '127.0.0.1:6379', `127.0.0.1:${own.port}`, '10.0.2.2:5432', `10.0.2.2:${own.port}`];
  const probe = 'const net = require("net"); for (const x of process.argv.slice(1)) { const [h, p] = x.split(":"); ' +
    'const s = net.connect({ host: h, port: Number(p), timeout: 3000 }); const done = (r) => { console.log(x + " " + r); s.destroy(); }; ' +
    's.on("connect", () => done("connected")); s.on("timeout", () => done("timeout")); s.on("error", (e) => done(e.code)); }';
  const run = await deployAndRun(n, user, 'netprobe', `node -e '${probe}' ${targets.join(' ')}; sed -n "3,\\$p" /proc/net/dev | cut -d: -f1 | tr -d " " | sort | tr "\\n" " "`);
  const out = run.blackboard.run!.output;
  t.is(run.blackboard.run!.status, 'success', JSON.stringify(out));
  for (const x of targets) {
    t.regex(out.stdout, new RegExp(`^${x.replaceAll('.', '\\.')} `, 'm'), `${x} was tried: ${out.stdout} ${out.stderr}`);
    t.notRegex(out.stdout, new RegExp(`^${x.replaceAll('.', '\\.')} connected`, 'm'), `${x} answered a System state`);
  }
  t.regex(out.stdout, /lo tap0 $/, 'its own namespace, with the slirp4netns device');
});
