// Acceptance: SIGKILL a node while its actors hold non-terminal rows, restart it on the same database, and see
// every row's actor recovered (new epoch, recorded) and continuing from the row — on PGlite and on PostgreSQL.
import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openDb } from '../../src/storage/open.ts';
import type { Db } from '../../src/storage/db.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { createTestDatabase } from '../support/pg.ts';
import { eventually, startOrchNode, type NodeProcess } from '../support/node-process.ts';

interface NodeJson {
  node_id: string;
  status: string;
  heartbeat_count: number;
}

async function nodes(proc: NodeProcess): Promise<NodeJson[]> {
  const res = await fetch(`${proc.banner.http}/v1/cluster/nodes`, {
    headers: { authorization: `Bearer ${proc.banner.dev_token ?? ''}` },
  });
  if (res.status !== 200) throw new Error(`GET /v1/cluster/nodes: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { nodes: NodeJson[] }).nodes;
}

function byId(list: NodeJson[], id: string): NodeJson {
  const n = list.find((x) => x.node_id === id);
  if (!n) throw new Error(`node ${id} not listed`);
  return n;
}

/** Rows as a worker's earlier registration would have left them: ACTIVE, heartbeat just now, unowned. */
async function seedPeers(db: Db, ids: string[]): Promise<void> {
  for (const id of ids) {
    await db.query(
      `INSERT INTO cluster_nodes (node_id, role, status, grpc_address, tags, registered_at, last_heartbeat_at, heartbeat_count, epoch, updated_at)
       VALUES ($1, 'worker', 'ACTIVE', '127.0.0.1:1', '[]', now(), now(), 1, 0, now())`,
      [id],
    );
  }
}

async function eventsOf(db: Db, stream: string): Promise<{ type: string; payload: Record<string, unknown> }[]> {
  const res = await db.query<{ type: string; payload: Record<string, unknown> }>(
    'SELECT type, payload FROM event_log WHERE stream = $1 ORDER BY seq',
    [stream],
  );
  return res.rows;
}

async function scenario(t: import('ava').ExecutionContext, databaseUrl: string | undefined): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-recovery-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const dataDir = path.join(dir, 'data');
  const configFile = path.join(dir, 'node.yaml');
  const nodeId = `n-${Math.random().toString(36).slice(2, 8)}`;
  // Heartbeats every 300 ms; a remote peer is UNHEALTHY after 20 missed (6 s), longer than the first run lasts.
  await writeFile(
    configFile,
    `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: ${nodeId} }
spec:
  node: { id: ${nodeId}, role: hybrid }
  cluster: { heartbeat_interval_seconds: 0.3, missed_heartbeats: 20 }
`,
  );
  const env = { ORCH_CONFIG: configFile, ORCH_DATA_DIR: dataDir, DATABASE_URL: databaseUrl, REDIS_URL: undefined };
  const workers = [`${nodeId}-w1`, `${nodeId}-w2`];

  const prep = await openDb({ url: databaseUrl, dataDir }, silentLogger());
  await seedPeers(prep, workers);
  await prep.close();

  // First incarnation: recovers the seeded rows, heartbeats its own; then it is killed without warning.
  const first = await startOrchNode(env);
  t.teardown(() => first.child.kill('SIGKILL'));
  const before = await eventually(async () => {
    const self = byId(await nodes(first), nodeId);
    return self.heartbeat_count >= 3 ? self.heartbeat_count : undefined;
  }, 60_000, 'three heartbeats');
  const listed = await nodes(first);
  for (const w of workers) t.not(byId(listed, w).status, 'DEREGISTERED', 'peer rows are non-terminal when the node dies');
  t.is(await first.kill('SIGKILL'), 'SIGKILL');

  // Second incarnation on the same database.
  const second = await startOrchNode(env);
  t.teardown(() => second.child.kill('SIGKILL'));
  // Its own row continues counting from where the killed process left it.
  await eventually(async () => {
    const self = byId(await nodes(second), nodeId);
    return self.status === 'ACTIVE' && self.heartbeat_count > before + 2 ? true : undefined;
  }, 60_000, 'heartbeats to continue after restart');
  // The recovered peer actors go on watching deadlines taken from their rows, and mark the silent workers.
  await eventually(async () => {
    const list = await nodes(second);
    return workers.every((w) => byId(list, w).status === 'UNHEALTHY') ? true : undefined;
  }, 20_000, 'silent workers to be marked UNHEALTHY');
  t.is(await second.kill('SIGTERM'), 0, `graceful stop; stderr:\n${second.stderr().slice(-2000)}`);

  const db = await openDb({ url: databaseUrl, dataDir }, silentLogger());
  t.teardown(() => db.close());
  for (const id of [nodeId, ...workers]) {
    const recovered = (await eventsOf(db, `node:${id}`)).filter((e) => e.type === 'recovered');
    t.deepEqual(recovered.map((e) => e.payload.epoch), [1, 2], `node ${id} recovered once per incarnation`);
  }
  const selfRecovery = (await eventsOf(db, `node:${nodeId}`)).filter((e) => e.type === 'recovered')[1];
  t.true(Number(selfRecovery?.payload.heartbeat_count) >= before, 'the second incarnation started from the persisted count');
  const selfRow = await db.query<{ status: string }>('SELECT status FROM cluster_nodes WHERE node_id = $1', [nodeId]);
  t.is(selfRow.rows[0]?.status, 'DEREGISTERED', 'SIGTERM deregisters the node');
  for (const w of workers) {
    const types = (await eventsOf(db, `node:${w}`)).map((e) => e.type);
    t.true(types.includes('status_changed'), `${w} has its UNHEALTHY change recorded`);
  }
}

test('SIGKILL and restart on PGlite: every actor recovers from its row and continues', async (t) => {
  await scenario(t, undefined);
});

test('SIGKILL and restart on PostgreSQL: every actor recovers from its row and continues', async (t) => {
  const database = await createTestDatabase({ migrated: true });
  t.teardown(() => database.drop());
  await scenario(t, database.url);
});
