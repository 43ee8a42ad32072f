// DockerRuntime.exec (cmd.run over SEAL in a docker-isolated execution) against the real podman engine
// (DOCKER_HOST, scripts/setup-podman.sh): a command runs in the live container beside its main process, sees its
// mounts and environment, is tail-trimmed over the ceiling and killed past its timeout. Fails (never skips)
// without the engine.
import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { DEFAULT_RUNTIME_IMAGE } from '../../src/agents/runtime/docker.ts';
import { createRuntime, resolveDockerHost } from '../../src/agents/runtime/select.ts';

const rt = createRuntime('docker', { logger: silentLogger(), dockerHost: resolveDockerHost(), nodeId: 'seal-exec-test' });
let id: string;
let dir: string;

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'orch-exec-'));
  await writeFile(path.join(dir, 'hello.txt'), 'from the volume');
  const h = await rt.start({
    executionId: `exec-${Math.random().toString(36).slice(2, 8)}`,
    agentId: 'agent-test',
    image: DEFAULT_RUNTIME_IMAGE,
    imagePullPolicy: 'Never',
    command: ['sleep', '300'],
    env: { ORCH_MARK: 'in-container' },
    mounts: [{ hostPath: dir, sandboxPath: '/workspace', readOnly: false }],
    workdir: '/workspace',
    network: false,
    labels: { 'orch.node_id': 'seal-exec-test' },
  });
  id = h.id;
});
test.after.always(async () => {
  if (id) await rt.stop(id);
  await rm(dir, { recursive: true, force: true });
});

const req = (command: string, args: string[], o: { timeout?: number; max?: number } = {}) => ({
  command,
  args,
  cwd: '/workspace',
  timeout_secs: o.timeout ?? 30,
  max_output_bytes: o.max ?? 4096,
});

test('exec runs in the container: its mounts, its environment, exit codes', async (t) => {
  const cat = await rt.exec(id, req('cat', ['hello.txt']));
  t.is(cat.stdout, 'from the volume');
  t.is(cat.exit_code, 0);
  t.false(cat.timed_out);
  t.regex((await rt.exec(id, req('env', []))).stdout, /^ORCH_MARK=in-container$/m);
  const missing = await rt.exec(id, req('cat', ['nope']));
  t.not(missing.exit_code, 0);
  t.regex(missing.stderr, /nope/);
});

test('exec output over the ceiling is tail-trimmed; past the timeout it is killed', async (t) => {
  const long = await rt.exec(id, req('seq', ['1', '2000'], { max: 50 }));
  t.true(long.truncated);
  t.true(long.stdout.endsWith('2000\n'));
  const started = Date.now();
  const slow = await rt.exec(id, req('sleep', ['600'], { timeout: 1 }));
  t.true(slow.timed_out);
  // Far under the command's 600 s: the 1 s timeout killed it (the margin is for podman on a loaded machine).
  t.true(Date.now() - started < 60_000, `took ${Date.now() - started} ms`);
});

test('exec in a sandbox that is gone rejects', async (t) => {
  await t.throwsAsync(rt.exec('no-such-container', req('true', [])), { message: /not running/ });
});
