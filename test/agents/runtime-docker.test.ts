// DockerRuntime against a real Docker-API engine (podman's service here: scripts/setup-podman.sh). DOCKER_HOST from
// the environment, default unix:///run/orch-podman/podman.sock. A missing engine or image FAILS these tests (with
// CI=true and without): they are never skipped silently.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { DEFAULT_RUNTIME_IMAGE, DockerRuntime } from '../../src/agents/runtime/docker.ts';
import { createRuntime, dockerAvailable, resolveDockerHost } from '../../src/agents/runtime/select.ts';
import { GATEWAY_SOCKET_NAME, SANDBOX_GATEWAY_SOCKET, type SandboxSpec } from '../../src/agents/runtime/types.ts';

const dockerHost = resolveDockerHost();
const rt = createRuntime('docker', { logger: silentLogger(), dockerHost, nodeId: 'test-node' });
const started: string[] = [];
const tmpDirs: string[] = [];

let ready: Promise<string | null> | undefined;
/** null when the engine answers and the image exists; else the reason (the test then fails with it). */
function engineProblem(): Promise<string | null> {
  ready ??= (async () => {
    if (!(await dockerAvailable(dockerHost, 30_000))) {
      return `no Docker-API engine answers at DOCKER_HOST=${dockerHost}; run scripts/setup-podman.sh (as root) first`;
    }
    try {
      await rt.docker.getImage(DEFAULT_RUNTIME_IMAGE).inspect();
    } catch {
      return `image ${DEFAULT_RUNTIME_IMAGE} is missing; run scripts/setup-podman.sh to build it`;
    }
    return null;
  })();
  return ready;
}

const rand = () => randomBytes(4).toString('hex');

async function tmp(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'orch-rt-'));
  tmpDirs.push(d);
  return d;
}

function spec(over: Partial<SandboxSpec> & Pick<SandboxSpec, 'command'>): SandboxSpec {
  const executionId = `test-${rand()}`;
  return {
    executionId,
    agentId: 'agent-test',
    image: DEFAULT_RUNTIME_IMAGE,
    imagePullPolicy: 'Never',
    env: {},
    mounts: [],
    workdir: '/workspace',
    network: false,
    labels: { 'orch.node_id': 'test-node' },
    ...over,
  };
}

async function run(s: SandboxSpec): Promise<{ id: string; code: number }> {
  const h = await rt.start(s);
  started.push(h.id);
  const code = await h.exited;
  return { id: h.id, code };
}

test.after.always(async () => {
  await Promise.all(started.map((id) => rt.stop(id).catch(() => undefined)));
  await Promise.all(tmpDirs.map((d) => rm(d, { recursive: true, force: true })));
});

test.beforeEach(async (t) => {
  const problem = await engineProblem();
  if (problem) t.fail(problem);
});

test('exit code and a file written to a bind mount', async (t) => {
  const ws = await tmp();
  const { code } = await run(spec({
    command: ['sh', '-c', 'echo hi > /workspace/out.txt; exit 3'],
    mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }],
  }));
  t.is(code, 3);
  t.is(await readFile(path.join(ws, 'out.txt'), 'utf8'), 'hi\n');
});

test('only the given env is visible, no secret of the orchestrator leaks', async (t) => {
  process.env.ORCH_TEST_SECRET_DOCKER = 'sekrit-value';
  const ws = await tmp();
  const { code } = await run(spec({
    command: ['sh', '-c', 'env > /workspace/env.txt'],
    env: { ORCH_EXECUTION_ID: 'x1', FOO: 'bar baz' },
    mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }],
  }));
  t.is(code, 0);
  const env = await readFile(path.join(ws, 'env.txt'), 'utf8');
  t.regex(env, /^FOO=bar baz$/m);
  t.regex(env, /^ORCH_EXECUTION_ID=x1$/m);
  t.notRegex(env, /sekrit-value|ORCH_TEST_SECRET|OPENAI|DATABASE_URL/);
});

test('a read-only mount cannot be written', async (t) => {
  const ro = await tmp();
  await writeFile(path.join(ro, 'in.txt'), 'data');
  const { code } = await run(spec({
    command: ['sh', '-c', 'cat /in/in.txt && ! echo x > /in/new.txt'],
    mounts: [{ hostPath: ro, sandboxPath: '/in', readOnly: true }],
  }));
  t.is(code, 0);
});

test('NetworkMode none: only lo, no TCP to the host, but HTTP over the bind-mounted unix socket works; node runs', async (t) => {
  // Host side: a TCP server on all interfaces and the gateway stand-in on a unix socket in the run dir.
  const tcp = net.createServer((s) => { s.on('error', () => undefined); s.end('tcp-reached\n'); });
  await new Promise<void>((r) => tcp.listen(0, '0.0.0.0', r));
  const tcpPort = (tcp.address() as net.AddressInfo).port;
  const runDir = path.join(await tmp(), 'run', 'exec');
  await mkdir(runDir, { recursive: true });
  const sock = path.join(runDir, GATEWAY_SOCKET_NAME);
  const gw = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d)).on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ path: req.url, method: req.method, got: body }));
    });
  });
  await new Promise<void>((r) => gw.listen(sock, r));
  t.teardown(() => { tcp.close(); gw.close(); });

  const hostIp = Object.values(os.networkInterfaces()).flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal)?.address ?? '127.0.0.1';
  const ws = await tmp();
  await writeFile(path.join(ws, 'client.mjs'), `
import http from 'node:http';
import net from 'node:net';
import fs from 'node:fs';
const out = {};
const tryTcp = (host) => new Promise((r) => {
  const s = net.connect({ host, port: ${tcpPort}, timeout: 1500 });
  s.on('connect', () => { s.destroy(); r('connected'); });
  s.on('timeout', () => { s.destroy(); r('timeout'); });
  s.on('error', (e) => r(e.code));
});
out.loopback = await tryTcp('127.0.0.1');
out.hostIp = await tryTcp(${JSON.stringify(hostIp)});
out.netdev = fs.readFileSync('/proc/net/dev', 'utf8').split('\\n').slice(2).map((l) => l.split(':')[0].trim()).filter(Boolean);
const url = new URL(process.env.ORCH_ORCHESTRATOR_URL);
out.gateway = await new Promise((resolve, reject) => {
  const req = http.request({ socketPath: url.pathname, path: '/v1/dispatch-gateway', method: 'POST',
    headers: { 'content-type': 'application/json' } }, (res) => {
    let b = ''; res.on('data', (d) => (b += d)); res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(b) }));
  });
  req.on('error', reject);
  req.end(JSON.stringify({ type: 'generate' }));
});
out.node = process.version;
fs.writeFileSync('/workspace/result.json', JSON.stringify(out));
`);
  const s = spec({
    command: ['node', '/workspace/client.mjs'],
    env: { ORCH_ORCHESTRATOR_URL: rt.orchestratorUrl(8080) },
    mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }],
    runDir,
  });
  const h = await rt.start(s);
  started.push(h.id);
  const code = await h.exited;
  if (code !== 0) t.log(await rt.output(h.id));
  t.is(code, 0);
  const info = await rt.inspect(h.id);
  t.is(info.HostConfig.NetworkMode, 'none');
  const out = JSON.parse(await readFile(path.join(ws, 'result.json'), 'utf8'));
  t.is(rt.orchestratorUrl(8080), `unix://${SANDBOX_GATEWAY_SOCKET}`);
  t.deepEqual(out.netdev, ['lo']);
  t.not(out.loopback, 'connected');
  t.not(out.hostIp, 'connected');
  t.deepEqual(out.gateway, { status: 200, body: { path: '/v1/dispatch-gateway', method: 'POST', got: '{"type":"generate"}' } });
  t.is(out.node, process.version);
});

test('node -e runs inside the image and stdout is readable', async (t) => {
  const { id, code } = await run(spec({ command: ['node', '-e', 'console.log("sum", 40 + 2)'] }));
  t.is(code, 0);
  t.is((await rt.output(id)).stdout, 'sum 42\n');
});

test('labels, memory and cpu limits are applied', async (t) => {
  const s = spec({ command: ['sh', '-c', 'exit 0'], memoryBytes: 64 * 1024 * 1024, cpu: 500 });
  const { id, code } = await run(s);
  t.is(code, 0);
  const info = await rt.inspect(id);
  t.is(info.HostConfig.Memory, 64 * 1024 * 1024);
  t.is(info.HostConfig.NanoCpus, 500_000_000);
  t.is(info.HostConfig.AutoRemove, false);
  t.is(info.Config.Labels['orch.execution_id'], s.executionId);
  t.is(info.Config.Labels['orch.agent_id'], 'agent-test');
  t.is(info.Config.Labels['orch.node_id'], 'test-node');
  t.is(info.Config.WorkingDir, '/workspace');
});

/** When the engine recorded the container's death (its `die` event), in ms since the epoch. */
async function diedAt(id: string, sinceMs: number): Promise<number | undefined> {
  const stream = await rt.docker.getEvents({
    since: Math.floor(sinceMs / 1000) - 1,
    until: Math.ceil(Date.now() / 1000) + 1,
    filters: JSON.stringify({ container: [id] }),
  } as never);
  const chunks: Buffer[] = [];
  for await (const chunk of stream as unknown as AsyncIterable<Buffer>) chunks.push(chunk);
  for (const line of Buffer.concat(chunks).toString().split('\n')) {
    if (!line.trim()) continue;
    const e = JSON.parse(line) as { Action?: string; status?: string; timeNano?: number; time?: number };
    if ((e.Action ?? e.status) === 'die') return e.timeNano !== undefined ? e.timeNano / 1e6 : (e.time ?? 0) * 1000;
  }
  return undefined;
}

// The bound proves stop kills at once instead of waiting for the engine's 10 s stop grace. It is measured on when the
// engine recorded the death (the die event), not on how long stop() took: the removal after the kill and this
// process's own scheduling have taken seconds when the machine's two cores ran the whole suite.
test('stop of a sleeping container kills it well inside the 10 s stop grace and removes it; stop is idempotent', async (t) => {
  const h = await rt.start(spec({ command: ['sleep', '600'] }));
  started.push(h.id);
  await new Promise((r) => setTimeout(r, 200));
  const t0 = Date.now();
  await rt.stop(h.id);
  const died = await diedAt(h.id, t0);
  t.truthy(died, 'the engine recorded the death');
  const ms = (died ?? Infinity) - t0;
  t.log(`killed ${Math.round(ms)} ms after stop() was called; stop() returned after ${Date.now() - t0} ms`);
  t.true(ms < 5000, `killed ${ms} ms after stop() was called`);
  t.is(await h.exited, 137);
  const err = await t.throwsAsync(rt.inspect(h.id));
  t.is((err as { statusCode?: number }).statusCode, 404);
  await t.notThrowsAsync(rt.stop(h.id));
});

test('reap removes every container carrying the label, running or exited', async (t) => {
  const value = `reap-${rand()}`;
  const a = await rt.start(spec({ command: ['sleep', '60'], labels: { 'orch.node_id': value } }));
  const b = await rt.start(spec({ command: ['sh', '-c', 'exit 0'], labels: { 'orch.node_id': value } }));
  const other = await rt.start(spec({ command: ['sleep', '60'] }));
  started.push(a.id, b.id, other.id);
  await b.exited;
  const removed = await rt.reap('orch.node_id', value);
  t.deepEqual([...removed].sort(), [a.id, b.id].sort());
  const left = await rt.docker.listContainers({ all: true, filters: { label: [`orch.node_id=${value}`] } });
  t.is(left.length, 0);
  t.truthy(await rt.inspect(other.id), 'a container without the label stays');
  t.deepEqual(await rt.reap('orch.node_id', value), []);
});

test('pull policy Never / IfNotPresent with a missing image: a clear error naming the image', async (t) => {
  const image = `localhost/orch-missing-${rand()}:latest`;
  const never = await t.throwsAsync(rt.start(spec({ command: ['true'], image, imagePullPolicy: 'Never' })));
  t.regex(never.message, new RegExp(`${image}.*Never`));
  const ifp = await t.throwsAsync(rt.start(spec({ command: ['true'], image, imagePullPolicy: 'IfNotPresent' })));
  t.true(ifp.message.includes(image), ifp.message);
  t.regex(ifp.message, /pulling it failed/);
});

test('imagePullPolicy Always falls back to the local image when the pull fails', async (t) => {
  const { code } = await run(spec({ command: ['sh', '-c', 'exit 5'], imagePullPolicy: 'Always' }));
  t.is(code, 5);
});

test('dockerAvailable is false for a socket nobody listens on', async (t) => {
  t.false(await dockerAvailable(`unix:///tmp/orch-no-such-${rand()}.sock`, 500));
  t.true(rt instanceof DockerRuntime);
});
