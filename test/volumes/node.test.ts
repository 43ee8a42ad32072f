// The node runs the volume reaper at spec.volumes.reaper_interval_seconds and stops it at shutdown; the config key
// is validated like every other.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { loadNodeConfig } from '../../src/config/load.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { startNode } from '../../src/node/node.ts';
import { createTestDatabase } from '../support/pg.ts';

const yaml = (extra: string): string => `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: vol-node }
spec:
  node: { id: vol-node }
  http: { bind: 127.0.0.1, port: 0 }
  grpc: { port: 0 }
  cluster: { cluster_grpc_port: 0 }
  log: { level: silent }
${extra}`;

test('spec.volumes.reaper_interval_seconds: accepted, defaulted when absent, refused when not positive', (t) => {
  const env = {};
  t.deepEqual(loadNodeConfig({ text: yaml('  volumes: { reaper_interval_seconds: 5 }\n'), env }).volumes, { reaper_interval_seconds: 5 });
  t.is(loadNodeConfig({ text: yaml(''), env }).volumes, undefined);
  t.throws(() => loadNodeConfig({ text: yaml('  volumes: { reaper_interval_seconds: 0 }\n'), env }), { message: /reaper_interval_seconds/ });
  t.throws(() => loadNodeConfig({ text: yaml('  volumes: { reaper_every: 5 }\n'), env }), { message: /reaper_every/ });
});

test('a running node reaps an expired ephemeral volume on its own and stops the reaper at shutdown', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-volume-node-'));
  const db = await createTestDatabase({ migrated: true });
  t.teardown(async () => {
    await db.drop();
    await rm(dir, { recursive: true, force: true });
  });
  const config = loadNodeConfig({
    text: yaml(`  volumes: { reaper_interval_seconds: 0.2 }\n  database: { url: ${db.url} }\n  data_dir: ${dir}\n`),
    env: {},
  });
  const node = await startNode(config, silentLogger());
  let stopped = false;
  t.teardown(async () => {
    if (!stopped) await node.stop();
  });
  // A TTL long enough for the write below on any machine; the volume is then made to expire by its row, so a slow
  // create and write (load 16: over a second) cannot find it already expired.
  const v = await node.volumes.create({ tenantId: 'acme', ownerSubject: 'alice', label: 'scratch', sizeLimitBytes: 100, storageClass: 'ephemeral', ttlSeconds: 3600 });
  await node.volumes.writeFile('acme', v.id, 'x', 'x');
  const volDir = path.join(dir, 'volumes', v.id);
  t.true(existsSync(volDir));
  await node.db.query(`UPDATE volumes SET expires_at = now() - interval '1 second' WHERE id = $1`, [v.id]);
  const keep = await node.volumes.create({ tenantId: 'acme', ownerSubject: 'alice', label: 'kept', sizeLimitBytes: 100 });
  const deadline = Date.now() + 30_000;
  // The reaper removes the directory, then the row: wait for both (a loaded machine shows the gap).
  const rowLeft = async (): Promise<boolean> => ((await node.db.query('SELECT id FROM volumes WHERE id = $1', [v.id])).rowCount ?? 0) > 0;
  while ((existsSync(volDir) || (await rowLeft())) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  t.false(existsSync(volDir), 'the reaper removed the expired volume');
  t.is((await node.db.query('SELECT id FROM volumes WHERE id = $1', [v.id])).rowCount, 0);
  t.is((await node.volumes.get('acme', keep.id)).id, keep.id);
  await node.stop();
  stopped = true;
});
