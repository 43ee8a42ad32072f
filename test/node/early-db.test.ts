// `orch up` builds the node while PGlite opens on its worker thread (src/node/first-steps.ts FirstSteps.early) and
// awaits the open before it listens. An open that fails must still fail the start: no banner, exit 1, the cause
// named (as when the node awaited the database first).
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ORCH_BIN } from '../support/node-process.ts';

test('orch up whose PGlite cannot open exits 1 naming the cause, and prints no banner', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-early-db-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // A file where PGlite's directory must be.
  await writeFile(path.join(dir, 'pglite'), 'not a directory');
  const { ORCH_CONFIG: _c, DATABASE_URL: _d, REDIS_URL: _r, ...env } = process.env;
  const res = spawnSync(process.execPath, [ORCH_BIN, '--json', 'up'], {
    env: { ...env, ORCH_DATA_DIR: dir, ORCH_HTTP_PORT: '0', ORCH_GRPC_PORT: '0', ORCH_CLUSTER_GRPC_PORT: '0' },
    encoding: 'utf8',
    timeout: 120_000,
  });
  t.is(res.status, 1, res.stderr.slice(-2000));
  t.is(res.stdout, '', 'no banner');
  t.regex(res.stderr, /orch: EEXIST: file already exists, mkdir .*pglite/);
});
