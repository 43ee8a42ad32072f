// Issue 15, item 1: with the gateway socket under `<dataDir>/run/<execution_id>/` a data dir over ~45 characters
// broke every execution (Node cut the socket path to 107 bytes without a word). Here a node with a 200-character
// data dir runs the acceptance scenario (write, run, fail validation, fix) against the scripted model, in a
// bubblewrap sandbox and in a podman container, and the socket directory's guarantees are checked directly.
import test from 'ava';
import { chmod, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_DOCKER_HOST } from '../../src/agents/runtime/docker.ts';
import { executionRunDir, nodeRunRoot, prepareNodeRunRoot, removeNodeRunRoot, UNIX_SOCKET_PATH_MAX } from '../../src/agents/execution/run-dir.ts';
import { createTestDatabase } from '../support/pg.ts';
import { runIterativeScenario, type ScenarioEnv } from './execution-scenarios.ts';

const DATA_DIR_LENGTH = 200;

/** A scratch dir whose `data` subdirectory (the node's data dir, see startStack) is exactly 200 characters long. */
async function longDir(t: import('ava').ExecutionContext): Promise<string> {
  const base = await mkdtemp(path.join(os.tmpdir(), 'orch-long-'));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const filler = DATA_DIR_LENGTH - (base.length + 1) - '/data'.length;
  const dir = path.join(base, 'x'.repeat(filler));
  await mkdir(dir);
  t.is(path.join(dir, 'data').length, DATA_DIR_LENGTH);
  return dir;
}

test('process isolation: an agent runs to completion with a 200-character data dir', async (t) => {
  const env: ScenarioEnv = { dir: await longDir(t), isolation: 'process' };
  await runIterativeScenario(t, env);
});

test('podman: an agent runs to completion with a 200-character data dir', async (t) => {
  const db = await createTestDatabase({ migrated: true });
  t.teardown(() => db.drop());
  const env: ScenarioEnv = { dir: await longDir(t), isolation: 'docker', dockerHost: process.env.DOCKER_HOST || DEFAULT_DOCKER_HOST, databaseUrl: db.url };
  await runIterativeScenario(t, env);
});

test('the run directory: short socket path, private root, a planted root refused, removed at shutdown', async (t) => {
  const dataDir = path.join('/', 'y'.repeat(250), 'data');
  const root = nodeRunRoot(dataDir);
  t.teardown(() => removeNodeRunRoot(dataDir));
  const dir = await executionRunDir(dataDir, '0b3c1c2e-8d5f-4a43-9d47-1f1d2b8e9a10');
  t.true(path.join(dir, 'gateway.sock').length <= UNIX_SOCKET_PATH_MAX);
  t.is((await stat(root)).mode & 0o777, 0o700);
  t.is(nodeRunRoot(dataDir), root, 'stable for a restarted node');
  t.not(nodeRunRoot(`${dataDir}2`), root, 'distinct per data dir');
  await t.throwsAsync(executionRunDir(dataDir, 'e'.repeat(100)), { message: /unix sockets allow 107/ });
  await removeNodeRunRoot(dataDir);

  // Somebody else's directory of that name (here: group and world writable) is not used.
  await mkdir(root, { mode: 0o777 });
  await chmod(root, 0o777);
  await t.throwsAsync(executionRunDir(dataDir, 'x'), { message: /not a private \(0700\) directory/ });
});

test('a starting node removes the socket roots of nodes whose data dir is gone, and keeps the others', async (t) => {
  const live = await mkdtemp(path.join(os.tmpdir(), 'orch-live-'));
  const gone = await mkdtemp(path.join(os.tmpdir(), 'orch-gone-'));
  const starting = await mkdtemp(path.join(os.tmpdir(), 'orch-starting-'));
  t.teardown(async () => {
    for (const d of [live, gone, starting]) {
      await removeNodeRunRoot(d);
      await rm(d, { recursive: true, force: true });
    }
  });
  await executionRunDir(live, '11111111-1111-4111-8111-111111111111');
  await executionRunDir(gone, '22222222-2222-4222-8222-222222222222');
  await rm(gone, { recursive: true }); // the node was SIGKILLed and its data dir deleted
  await prepareNodeRunRoot(starting);
  t.true(existsSync(nodeRunRoot(starting)));
  t.true(existsSync(path.join(nodeRunRoot(live), '11111111-1111-4111-8111-111111111111')), 'a root whose data dir exists stays');
  t.false(existsSync(nodeRunRoot(gone)), 'the leftover is removed');
});
