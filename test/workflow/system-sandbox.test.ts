// Workflow System states run in a sandbox, never on the orchestrator host (issue 14; docs/SECURITY.md "Sandboxing
// tenant commands"). Each test replays an attack as it was made against a node and checks that it is refused:
// the command runs as an unprivileged uid in a bubblewrap sandbox that sees the run's workspace and nothing of the
// host (no node environment, no data directory, no other tenant's volume); template values are data; and where no
// sandbox can be made the state fails saying so instead of running the command on the host.
import test from 'ava';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat, writeFile, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ProcessRuntime } from '../../src/agents/runtime/process.ts';
import { createRuntime, dockerAvailable, DEFAULT_DOCKER_HOST } from '../../src/agents/runtime/select.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { SystemSandbox } from '../../src/workflow/states/system.ts';
import { startScratchSweeper } from '../../src/agents/runtime/tenant-sandbox.ts';
import { eventually } from '../support/node-process.ts';
import { manifest, startEngine, TENANT } from './engine-harness.ts';

interface SystemOutput {
  status: string;
  output: { stdout: string; stderr: string; exit_code: number };
}

async function scratchRoot(t: { teardown(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-sbx-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function sandbox(scratchDir: string, over: Partial<SystemSandbox> = {}): SystemSandbox {
  const runtime = new ProcessRuntime({ logger: silentLogger(), sandbox: 'bwrap' });
  return { runtime: () => runtime, scratchDir, ...over };
}

test('the node environment and root are out of reach: id and /proc/$PPID/environ of the attack', async (t) => {
  const scratch = await scratchRoot(t);
  const h = await startEngine(t, { system: sandbox(scratch) });
  await h.deploy(manifest('env-leak', 'probe', `    probe:
      kind: System
      command: |
        id; tr "\\0" "\\n" < /proc/$PPID/environ | grep -E "WEBHOOK_SECRET|OPENAI_API_KEY"; echo "---"; tr "\\0" "\\n" < /proc/$PPID/environ; echo "---"; env
      env: { DECLARED: 'yes {{input.who}}' }
      transitions: []
`));
  const id = await h.run('env-leak', { input: { who: 'ann' } });
  const row = await h.waitFor(id);
  const probe = row.blackboard.probe as SystemOutput;
  const out = probe.output.stdout;
  t.regex(out, /^uid=65534\b/, out);
  t.notRegex(out, /uid=0\b/);
  // The sandbox's parent holds only PATH; the command's own environment is the declared env (plus the sandbox's
  // PATH and HOME). On the host the ava worker's environment (HOME=/root, ...) would have shown up.
  const [, parentEnv = '', ownEnv = ''] = out.split('---\n');
  t.deepEqual(parentEnv.trim().split('\n').filter(Boolean).map((l) => l.split('=')[0]).filter((k) => k !== 'PATH'), [], parentEnv);
  t.true(ownEnv.includes('DECLARED=yes ann'), ownEnv);
  for (const key of Object.keys(process.env)) {
    if (['PATH', 'HOME', 'PWD', 'SHLVL', 'OLDPWD', '_'].includes(key)) continue;
    t.false(ownEnv.split('\n').some((l) => l.startsWith(`${key}=`)), `node variable ${key} reached the command`);
  }
});

test("another tenant's volume (or any host file) cannot be read", async (t) => {
  const scratch = await scratchRoot(t);
  // A data directory as a node lays it out: <data_dir>/volumes/<volume id>/secret.txt of another tenant.
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'orch-sbx-data-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const secret = `s3cret-${randomBytes(8).toString('hex')}`;
  const volume = path.join(dataDir, 'volumes', randomUUID());
  await mkdir(volume, { recursive: true });
  await writeFile(path.join(volume, 'secret.txt'), secret);
  const h = await startEngine(t, { system: sandbox(scratch) });
  await h.deploy(manifest('steal', 'read', `    read:
      kind: System
      command: 'cat ${volume}/secret.txt; ls ${dataDir}; cat /etc/shadow; ls /root'
      transitions: []
`));
  const row = await h.waitFor(await h.run('steal'));
  const read = row.blackboard.read as SystemOutput;
  t.false(read.output.stdout.includes(secret), read.output.stdout);
  t.is(read.output.stdout, '');
  t.regex(read.output.stderr, /No such file or directory/);
  t.not(read.output.exit_code, 0);
});

test('template values are data: the webhook title is echoed literally and its command never runs', async (t) => {
  const scratch = await scratchRoot(t);
  const hostDir = await mkdtemp(path.join(os.tmpdir(), 'orch-sbx-inj-'));
  t.teardown(() => rm(hostDir, { recursive: true, force: true }));
  const hostFile = path.join(hostDir, 'FILE');
  const h = await startEngine(t, { system: sandbox(scratch) });
  await h.deploy(manifest('hook', 'echo', `    echo:
      kind: System
      command: 'echo title={{input.data.title}}; ls'
      transitions: []
`));
  for (const target of [hostFile, 'FILE']) {
    const title = `x; echo INJECTED uid=$(id -u) > ${target}`;
    const id = await h.run('hook', { input: { data: { title } } });
    const row = await h.waitFor(id);
    const echo = row.blackboard.echo as SystemOutput;
    t.is(row.status, 'completed', row.error ?? '');
    // `ls` of the workspace lists nothing: no FILE was written there.
    t.is(echo.output.stdout, `title=${title}\n`);
    t.false(existsSync(hostFile), 'the injected command wrote a host file');
    t.false(existsSync(path.join(scratch, id, 'FILE')), 'the injected command wrote into the workspace');
  }
});

test('the workspace is shared by the states of a run, owned by the sandbox user, and separate per run', async (t) => {
  const scratch = await scratchRoot(t);
  const h = await startEngine(t, { system: sandbox(scratch) });
  await h.deploy(manifest('pass', 'write', `    write:
      kind: System
      command: 'pwd; echo "{{input.text}}" > note.txt; ls /workspace'
      transitions: [{ target: read }]
    read:
      kind: System
      command: 'cat /workspace/note.txt; id -u'
      transitions: []
`));
  const a = await h.run('pass', { input: { text: 'first run' } });
  const b = await h.run('pass', { input: { text: 'second run' } });
  const [ra, rb] = await Promise.all([h.waitFor(a), h.waitFor(b)]);
  t.is(ra.status, 'completed', ra.error ?? '');
  t.is((ra.blackboard.write as SystemOutput).output.stdout, '/workspace\nnote.txt\n');
  t.is((ra.blackboard.read as SystemOutput).output.stdout, 'first run\n65534\n');
  t.is((rb.blackboard.read as SystemOutput).output.stdout, 'second run\n65534\n');
  // On the host: the run's scratch directory, written as the sandbox user.
  t.is(await readFile(path.join(scratch, a, 'note.txt'), 'utf8'), 'first run\n');
  t.is((await stat(path.join(scratch, a, 'note.txt'))).uid, 65534);
});

test('no bubblewrap (missing binary, or one that refuses): the state fails naming the sandbox, nothing runs on the host', async (t) => {
  const scratch = await scratchRoot(t);
  const hostDir = await mkdtemp(path.join(os.tmpdir(), 'orch-sbx-nobwrap-'));
  t.teardown(() => rm(hostDir, { recursive: true, force: true }));
  for (const [bwrapPath, reason] of [
    [`/nonexistent-${randomBytes(4).toString('hex')}/bwrap`, /bubblewrap binary .* does not exist/],
    ['/bin/false', /bubblewrap \(\/bin\/false\) cannot create a sandbox here/],
  ] as const) {
    const runtime = new ProcessRuntime({ logger: silentLogger(), bwrapPath });
    const h = await startEngine(t, { system: sandbox(scratch, { runtime: () => runtime }) });
    const marker = path.join(hostDir, `ran-${randomBytes(4).toString('hex')}`);
    await h.deploy(manifest('nobwrap', 'run', `    run:
      kind: System
      command: 'touch ${marker}; echo ran'
      transitions: [{ condition: on_failure, target: after }, { target: after }]
    after:
      kind: System
      command: 'update_blackboard {"after": "yes"}'
      transitions: []
`));
    const row = await h.waitFor(await h.run('nobwrap'));
    const run = row.blackboard.run as SystemOutput;
    t.is(run.status, 'failed');
    t.regex(run.output.stderr, /System state needs a sandbox and none could be made/);
    t.regex(run.output.stderr, reason);
    t.regex(run.output.stderr, /never runs it outside a sandbox/);
    t.is(run.output.stdout, '');
    t.false(existsSync(marker), 'the command ran on the host');
    // Built-ins need no sandbox and still run.
    t.is(row.blackboard.after, 'yes');
  }
});

test('docker isolation: System states run in a podman container as the unprivileged user with only the workspace', async (t) => {
  const host = process.env.DOCKER_HOST || DEFAULT_DOCKER_HOST;
  if (!(await dockerAvailable(host))) {
    t.fail(`no container engine answers at ${host}; run scripts/setup-podman.sh`);
    return;
  }
  const scratch = await scratchRoot(t);
  const runtime = createRuntime('docker', { logger: silentLogger(), dockerHost: host });
  const h = await startEngine(t, { system: sandbox(scratch, { runtime: () => runtime }) });
  const title = 'x; echo INJECTED > FILE';
  await h.deploy(manifest('in-podman', 'run', `    run:
      kind: System
      command: 'id -u; echo "$DECLARED"; echo title={{input.title}}; echo kept > out.txt; ls'
      env: { DECLARED: 'only this' }
      transitions: []
`));
  const id = await h.run('in-podman', { input: { title } });
  const row = await h.waitFor(id, undefined, 120_000);
  const run = row.blackboard.run as SystemOutput;
  t.is(run.status, 'success', run.output.stderr);
  t.is(run.output.stdout, `65534\nonly this\ntitle=${title}\nout.txt\n`);
  t.is(await readFile(path.join(scratch, id, 'out.txt'), 'utf8'), 'kept\n');
});

test('scratch workspaces of runs that ended (or are gone) are swept; a live run keeps its own', async (t) => {
  const scratch = await scratchRoot(t);
  const h = await startEngine(t, { system: sandbox(scratch) });
  await h.deploy(manifest('scratchy', 'work', `    work:
      kind: System
      command: 'echo {{input.text}} > note.txt; sleep {{input.nap}}'
      transitions: []
`));
  const done = await h.run('scratchy', { input: { text: 'done', nap: 0 } });
  await h.waitFor(done);
  const live = await h.run('scratchy', { input: { text: 'live', nap: 600 } });
  t.teardown(() => h.cap.runs.cancel(TENANT, live).then(() => undefined, () => undefined));
  await eventually(async () => (existsSync(path.join(scratch, live, 'note.txt')) ? true : undefined), 60_000, 'the live run to write its note');
  const gone = randomUUID();
  await mkdir(path.join(scratch, gone));
  await mkdir(path.join(scratch, 'not-a-run'));
  t.true(existsSync(path.join(scratch, done, 'note.txt')));
  const stop = startScratchSweeper({ db: h.db, scratchDir: scratch, logger: silentLogger(), intervalMs: 200 });
  t.teardown(stop);
  await eventually(async () => (!existsSync(path.join(scratch, done)) && !existsSync(path.join(scratch, gone)) ? true : undefined), 60_000, 'the sweep');
  t.true(existsSync(path.join(scratch, live, 'note.txt')), 'the live run keeps its workspace');
  t.true(existsSync(path.join(scratch, 'not-a-run')), 'only run directories are touched');
});
