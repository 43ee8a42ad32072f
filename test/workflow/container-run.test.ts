// ContainerRun over real containers (podman's Docker API, localhost/orch-runtime:latest): command rendering, shell,
// env, workdir, volumes, pull policy, cpu/memory, hard timeout, retry with doubling backoff, 1 MiB capture, removal,
// abort. The engine is not involved: each test runs the runner with a hand-built StateRunContext.
import test from 'ava';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { containerRunRunner } from '../../src/workflow/states/container-run.ts';
import { containerState, ctx, deps, engineProblem, leftovers, runtime, tmpDir, waitRunning } from './container-run-support.ts';

type Out = { status: string; exit_code: number | null; stdout: string; stderr: string; duration_ms: number; attempts: number; stdout_truncated?: boolean; stderr_truncated?: boolean; timed_out?: boolean; error?: string; output: Record<string, unknown> };

test.before(async () => {
  const problem = await engineProblem();
  if (problem) throw new Error(problem);
});

test('renders each command element, env and workdir; captures stdout/stderr; removes the container', async (t) => {
  const c = ctx({ scope: { input: { who: 'world' }, build: { output: { stdout: 'v1' } } } });
  const state = containerState({
    command: ['sh', '-c', 'echo "hello {{input.who}} $GREETING from $(pwd)"; echo "to stderr {{build.output.stdout}}" >&2'],
    env: { GREETING: 'hi-{{input.who}}' },
    workdir: '/tmp',
  });
  const r = await containerRunRunner(deps())(state, c);
  const o = r.output as Out;
  t.is(r.outcome.status, 'success');
  t.is(r.outcome.exit_code, 0);
  t.is(o.status, 'success');
  t.is(o.exit_code, 0);
  t.is(o.stdout, 'hello world hi-world from /tmp\n');
  t.is(o.stderr, 'to stderr v1\n');
  t.true(o.duration_ms > 0);
  t.deepEqual(o.output, { exit_code: 0, stdout: o.stdout, stderr: o.stderr, duration_ms: o.duration_ms, attempts: 1 });
  t.deepEqual(await leftovers(c.visitKey), []);
});

test('shell: true joins the elements and runs them with sh -c', async (t) => {
  const c = ctx({ scope: { n: 3 } });
  const r = await containerRunRunner(deps())(containerState({ command: ['echo', 'a{{n}}', '&&', 'echo', 'b', '|', 'tr', 'b', 'B'], shell: true }), c);
  t.is((r.output as Out).stdout, 'a3\nB\n');
  t.is(r.outcome.status, 'success');
});

test('template values in a shell script are data (shell: true and an explicit sh -c): printed, never run', async (t) => {
  const title = 'x; echo INJECTED uid=$(id -u) > FILE; `touch TICK`';
  for (const command of [['echo', 'title={{input.data.title}}', '&&', 'ls'], ['sh', '-c', "echo title={{input.data.title}} 'q={{input.data.title}}'; ls"]]) {
    const c = ctx({ scope: { input: { data: { title } } } });
    const shell = command[0] === 'echo';
    const r = await containerRunRunner(deps())(containerState({ command, shell }), c);
    const o = r.output as Out;
    t.is(r.outcome.status, 'success', o.stderr);
    // `ls` of the workdir shows no FILE and no TICK: nothing of the title ran.
    t.is(o.stdout, shell ? `title=${title}\n` : `title=${title} q=${title}\n`);
  }
});

test('without shell the elements are argv: no shell interprets them', async (t) => {
  const r = await containerRunRunner(deps())(containerState({ command: ['echo', 'a', '&&', '$HOME'] }), ctx());
  t.is((r.output as Out).stdout, 'a && $HOME\n');
});

test('a non-zero exit fails the state with the exit code', async (t) => {
  const r = await containerRunRunner(deps())(containerState({ command: ['sh', '-c', 'echo boom >&2; exit 7'] }), ctx());
  t.is(r.outcome.status, 'failed');
  t.is(r.outcome.exit_code, 7);
  t.is((r.output as Out).exit_code, 7);
  t.is((r.output as Out).stderr, 'boom\n');
  t.regex(r.error ?? '', /exited with code 7/);
});

test('image_pull_policy Never: a missing image fails clearly; the local image runs', async (t) => {
  const missing = await containerRunRunner(deps())(containerState({ command: ['true'], image: 'localhost/orch-no-such-image:1', image_pull_policy: 'Never' }), ctx());
  t.is(missing.outcome.status, 'failed');
  t.is(missing.outcome.exit_code, undefined);
  t.is((missing.output as Out).exit_code, null);
  t.regex(missing.error ?? '', /localhost\/orch-no-such-image:1 is not present .*Never/);
  const ok = await containerRunRunner(deps())(containerState({ command: ['true'], image_pull_policy: 'Never' }), ctx());
  t.is(ok.outcome.status, 'success');
});

test('image_pull_policy IfNotPresent: the local image is used without a pull; a missing one fails on the pull', async (t) => {
  const ok = await containerRunRunner(deps())(containerState({ command: ['true'], image_pull_policy: 'IfNotPresent' }), ctx());
  t.is(ok.outcome.status, 'success');
  const missing = await containerRunRunner(deps())(containerState({ command: ['true'], image: 'localhost/orch-no-such-image:2', image_pull_policy: 'IfNotPresent' }), ctx());
  t.is(missing.outcome.status, 'failed');
  t.regex(missing.error ?? '', /orch-no-such-image:2 is not present locally and pulling it failed \(imagePullPolicy IfNotPresent\)/);
});

test('volumes: a workflow volume is mounted read-write, another read-only; an undeclared one fails at entry', async (t) => {
  const rw = await tmpDir();
  const ro = await tmpDir();
  await writeFile(path.join(ro, 'in.txt'), 'from host');
  const c = ctx({ storage: { workspace: 'vol-ws', shared: { refs: 'vol-refs' } } });
  const d = deps({ 'vol-ws': rw, 'vol-refs': ro });
  const r = await containerRunRunner(d)(containerState({
    command: ['sh', '-c', 'cat /refs/in.txt > /workspace/out.txt; echo x > /refs/w.txt || echo readonly-refused'],
    volumes: [{ name: 'workspace', mount_path: '/workspace', read_only: false }, { name: 'refs', mount_path: '/refs', read_only: true }],
  }), c);
  t.is(r.outcome.status, 'success', r.error);
  t.is(await readFile(path.join(rw, 'out.txt'), 'utf8'), 'from host');
  t.regex((r.output as Out).stdout, /readonly-refused/);
  await t.throwsAsync(readFile(path.join(ro, 'w.txt')));

  const bad = await containerRunRunner(d)(containerState({ command: ['true'], volumes: [{ name: 'cache', mount_path: '/c', read_only: false }] }), c);
  t.is(bad.outcome.status, 'failed');
  t.is(bad.error, 'volume "cache" is not declared in spec.storage of this workflow (declared: workspace, refs)');
});

test('resources: cpu millicores become NanoCpus and memory a byte limit on the container', async (t) => {
  const c = ctx();
  const run = containerRunRunner(deps())(containerState({ command: ['sleep', '10'], resources: { cpu: 500, memory_bytes: 64 * 1024 * 1024, timeout_seconds: 60 } }), c);
  const id = await waitRunning(c.visitKey);
  const info = await runtime.inspect(id);
  t.is(info.HostConfig.NanoCpus, 500_000_000);
  t.is(info.HostConfig.Memory, 64 * 1024 * 1024);
  t.is(info.HostConfig.NetworkMode, 'none');
  t.is((await run).outcome.status, 'success');
  t.deepEqual(await leftovers(c.visitKey), []);
});

test('resources.timeout kills the container hard: failed, exit code recorded, container removed', async (t) => {
  const c = ctx();
  const t0 = Date.now();
  const r = await containerRunRunner(deps())(containerState({ command: ['sh', '-c', 'echo started; sleep 600'], resources: { timeout_seconds: 1 } }), c);
  // Far under the command's 600 s: the 1 s timeout killed it (the margin is for podman on a loaded machine).
  t.true(Date.now() - t0 < 60_000);
  t.is(r.outcome.status, 'failed');
  t.is(r.outcome.exit_code, 137);
  t.is((r.output as Out).timed_out, true);
  t.is((r.output as Out).stdout, 'started\n', 'the output before the kill is kept');
  t.regex(r.error ?? '', /resources\.timeout of 1 s/);
  t.deepEqual(await leftovers(c.visitKey), []);
});

test('retry: a command failing the first time succeeds on the second attempt after the backoff', async (t) => {
  const dir = await tmpDir();
  const c = ctx({ storage: { workspace: 'ws', shared: {} } });
  const t0 = Date.now();
  const r = await containerRunRunner(deps({ ws: dir }))(containerState({
    command: ['sh', '-c', 'if [ -f /workspace/marker ]; then echo second; else touch /workspace/marker; echo first; exit 3; fi'],
    volumes: [{ name: 'workspace', mount_path: '/workspace', read_only: false }],
    retry: { max_attempts: 3, backoff_seconds: 1 },
  }), c);
  t.is(r.outcome.status, 'success');
  t.is((r.output as Out).attempts, 2);
  t.is((r.output as Out).stdout, 'second\n');
  t.true(Date.now() - t0 >= 1000);
});

test('retry: the backoff doubles on each further attempt and the last failure is reported', async (t) => {
  const dir = await tmpDir();
  const c = ctx({ storage: { workspace: 'ws', shared: {} } });
  const r = await containerRunRunner(deps({ ws: dir }))(containerState({
    command: ['node', '-e', "require('fs').appendFileSync('/workspace/t', Date.now() + '\\n'); process.exit(4)"],
    volumes: [{ name: 'workspace', mount_path: '/workspace', read_only: false }],
    retry: { max_attempts: 3, backoff_seconds: 0.5 },
  }), c);
  t.is(r.outcome.status, 'failed');
  t.is(r.outcome.exit_code, 4);
  t.is((r.output as Out).attempts, 3);
  t.regex(r.error ?? '', /code 4 after 3 attempts/);
  const stamps = (await readFile(path.join(dir, 't'), 'utf8')).trim().split('\n').map(Number);
  t.is(stamps.length, 3);
  const [a, b, d] = stamps as [number, number, number];
  t.true(b - a >= 500, `first gap ${b - a} ms`);
  t.true(d - b >= 1000, `second gap ${d - b} ms`);
});

test('stdout and stderr are each captured up to 1 MiB and flagged truncated beyond', async (t) => {
  const r = await containerRunRunner(deps())(containerState({
    command: ['sh', '-c', "head -c 1500000 /dev/zero | tr '\\0' a; head -c 1200000 /dev/zero | tr '\\0' b >&2"],
  }), ctx());
  const o = r.output as Out;
  t.is(r.outcome.status, 'success');
  t.is(o.stdout.length, 1024 * 1024);
  t.is(o.stderr.length, 1024 * 1024);
  t.true(/^a+$/.test(o.stdout));
  t.true(/^b+$/.test(o.stderr));
  t.is(o.stdout_truncated, true);
  t.is(o.stderr_truncated, true);
});

test('output under the ceiling is whole and not flagged', async (t) => {
  const r = await containerRunRunner(deps())(containerState({ command: ['sh', '-c', "head -c 1048576 /dev/zero | tr '\\0' a"] }), ctx());
  const o = r.output as Out;
  t.is(o.stdout.length, 1024 * 1024);
  t.is(o.stdout_truncated, undefined);
});

test('aborting ctx.signal kills the container and fails the state', async (t) => {
  const ac = new AbortController();
  const c = ctx({ signal: ac.signal });
  const run = containerRunRunner(deps())(containerState({ command: ['sleep', '600'], retry: { max_attempts: 3, backoff_seconds: 0 } }), c);
  await waitRunning(c.visitKey);
  const t0 = Date.now();
  ac.abort(new Error('state timeout of 1 s elapsed'));
  const r = await run;
  // Far under the command's 600 s: the abort killed it (the margin is for podman on a loaded machine).
  t.true(Date.now() - t0 < 60_000);
  t.is(r.outcome.status, 'failed');
  t.is((r.output as Out).attempts, 1);
  t.regex(r.error ?? '', /container stopped: state timeout of 1 s elapsed/);
  t.deepEqual(await leftovers(c.visitKey), []);
});

test('a container left by a crashed run of the same visit is reaped before the new attempt', async (t) => {
  const c = ctx();
  const orphan = await runtime.start({
    executionId: c.workflowExecutionId, agentId: 'orphan', image: 'localhost/orch-runtime:latest', imagePullPolicy: 'Never',
    command: ['sleep', '60'], env: {}, mounts: [], workdir: '/', network: false, labels: { 'orch.visit_key': c.visitKey },
  });
  const r = await containerRunRunner(deps())(containerState({ command: ['true'] }), c);
  t.is(r.outcome.status, 'success');
  await orphan.exited;
  t.deepEqual(await leftovers(c.visitKey), []);
});
