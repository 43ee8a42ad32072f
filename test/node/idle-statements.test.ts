// Issue 18, idle cost: a controller with nothing to do must not keep its database busy. The node runs in process on
// a real PostgreSQL database through a recording Db (every statement it sends, transactions included), configured as
// the waiting-runs bench runs it (a 1 s heartbeat, parking after 1 s); after start-up settles, the statements of a
// quiet window are counted. Before the sweeps were merged (the engine's three reads a pass, the watch's three
// statements a tick) and the self heartbeat counted its executions itself, such a node sent ~950 statements a
// minute; now ~390 (the engine sweep and the watch tick every 0.5 s, the heartbeat, the worker-loss and
// lapsed-execution sweeps, the watch's adoption pass, the plan-generation check, the minute sampler). The bound
// fails on the old code. Timers only slip under load, so a slow machine sends fewer, never more.
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createAuthenticator } from '../../src/auth/authenticator.ts';
import { loadNodeConfig } from '../../src/config/load.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { startNode } from '../../src/node/node.ts';
import { openDb } from '../../src/storage/open.ts';
import { createTestDatabase } from '../support/pg.ts';
import { recordQueries } from '../support/query-recorder.ts';

const WINDOW_MS = 20_000;
const BOUND_PER_MINUTE = 500;

test('an idle controller sends at most 500 statements a minute (1 s heartbeat)', async (t) => {
  const database = await createTestDatabase({ migrated: true });
  t.teardown(() => database.drop());
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'orch-idle-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const text = `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: idle }
spec:
  node: { id: idle-${randomUUID().slice(0, 8)}, role: controller }
  http: { bind: 127.0.0.1, port: 0 }
  grpc: { port: 0 }
  cluster: { cluster_grpc_port: 0, heartbeat_interval_seconds: 1 }
  workflow: { park_after_seconds: 1 }
  log: { level: silent }
  database: { url: "${database.url}" }
  data_dir: ${dataDir}
  runtime: { default_isolation: process }
`;
  const config = loadNodeConfig({ text, env: {} });
  const rec = recordQueries(await openDb({ url: database.url, dataDir }, silentLogger()));
  const node = await startNode(config, silentLogger(), { db: Promise.resolve(rec.db), authenticator: createAuthenticator(config) });
  t.teardown(() => node.stop());
  // Start-up's own statements (recovery, the first adoption pass, the sampler's first minute) are not the idle cost.
  await new Promise((r) => setTimeout(r, 4_000));
  rec.clear();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, WINDOW_MS));
  const stmts = rec.statements();
  const elapsed = performance.now() - t0;
  const total = stmts.reduce((n, s) => n + s.calls, 0);
  const perMinute = (total / elapsed) * 60_000;
  const top = [...stmts].sort((a, b) => b.calls - a.calls).slice(0, 8).map((s) => `${s.calls} × ${s.sql.replace(/\s+/g, ' ').slice(0, 100)}`);
  t.log(`${total} statements in ${(elapsed / 1000).toFixed(1)} s = ${perMinute.toFixed(0)}/min`);
  // Not vacuous: the node is alive and sweeping (its heartbeat and the engine's sweep are among what was sent).
  t.true(stmts.some((s) => /heartbeat_count = heartbeat_count \+ 1/.test(s.sql)), 'the node heartbeats');
  t.true(stmts.some((s) => /SELECT ARRAY\(SELECT id::TEXT AS id FROM workflow_executions/.test(s.sql)) || stmts.some((s) => /FROM workflow_executions\s+WHERE status IN/.test(s.sql)), 'the engine sweeps');
  t.true(perMinute <= BOUND_PER_MINUTE, `an idle controller sent ${perMinute.toFixed(0)} statements a minute (bound ${BOUND_PER_MINUTE}):\n${top.join('\n')}`);
});
