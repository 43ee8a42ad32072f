// Two controllers on one PostgreSQL (issue 7 part 5): real `orch up --role controller` processes sharing a database
// and a Redis, one identity provider. Runs are started on both; SIGKILL one controller in the middle; the other
// takes its runs over once their leases expire (its periodic sweep, no restart) and finishes every one of them from
// its last written state: none lost, no state visit recorded twice, gap-free event sequences. Every controller
// serves every API call: a run started on A is read, its logs paged and its live stream followed through B.
import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { silentLogger } from '../../src/logging/logger.ts';
import { openDb } from '../../src/storage/open.ts';
import type { Db } from '../../src/storage/db.ts';
import { createTestDatabase } from '../support/pg.ts';
import { redisUrl } from '../support/redis.ts';
import { makeTestIdp } from '../support/jwks.ts';
import { eventually, startOrchNode, type NodeProcess } from '../support/node-process.ts';
import { api, controllerConfig, readSse, STATES, workflowYaml, expectedAcc } from './support.ts';

interface RunRow {
  id: string;
  status: string;
  current_state: string | null;
  blackboard: Record<string, unknown>;
  error: string | null;
  owner_node: string | null;
  epoch: number;
}

async function rows(db: Db, ids: string[]): Promise<RunRow[]> {
  return (
    await db.query<RunRow>('SELECT id, status, current_state, blackboard, error, owner_node, epoch FROM workflow_executions WHERE id = ANY($1::UUID[]) ORDER BY id', [ids])
  ).rows;
}

test('SIGKILL one of two controllers mid-run: the other finishes all its workflows, each state recorded once; any controller serves any run', async (t) => {
  const database = await createTestDatabase({ migrated: true });
  t.teardown(() => database.drop());
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-ctl2-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const idp = await makeTestIdp();
  const tenant = `t-${randomBytes(4).toString('hex')}`;
  const token = await idp.sign({ sub: 'alice', tenant_id: tenant, realm_access: { roles: ['tenant-admin'] } });
  const suffix = randomBytes(3).toString('hex');
  const start = async (name: string): Promise<NodeProcess> => {
    const file = path.join(dir, `${name}.yaml`);
    await writeFile(file, controllerConfig({ nodeId: `${name}-${suffix}`, jwksFile: idp.jwksFile, issuer: idp.issuer, audience: idp.audience, leaseSeconds: 3 }));
    const node = await startOrchNode({ ORCH_CONFIG: file, ORCH_DATA_DIR: path.join(dir, name), DATABASE_URL: database.url, REDIS_URL: redisUrl() });
    t.teardown(() => node.child.kill('SIGKILL'));
    return node;
  };
  const [a, b] = await Promise.all([start('ctl-a'), start('ctl-b')]);
  t.is(a.banner.role, 'controller');
  const A = { http: a.banner.http, token };
  const B = { http: b.banner.http, token };
  const db = await openDb({ url: database.url, dataDir: dir }, silentLogger());
  t.teardown(() => db.close());

  const deployed = await api(A, 'POST', '/v1/workflows', workflowYaml('relay'), 'application/yaml');
  t.is(deployed.status, 201, JSON.stringify(deployed.body));
  // Deployed through A, visible through B.
  t.is((await api(B, 'GET', '/v1/workflows/relay')).status, 200);

  const onA: string[] = [];
  const onB: string[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await api<{ execution_id: string }>(A, 'POST', '/v1/workflows/relay/run', { input: { seed: `a${i}` } });
    t.is(r.status, 201, JSON.stringify(r.body));
    onA.push(r.body.execution_id);
  }
  for (let i = 0; i < 2; i++) {
    const r = await api<{ execution_id: string }>(B, 'POST', '/v1/workflows/relay/run', { input: { seed: `b${i}` } });
    t.is(r.status, 201, JSON.stringify(r.body));
    onB.push(r.body.execution_id);
  }
  const watched = onA[0]!;
  // B serves a run A owns, while A runs it: detail, and the live stream (history from the database, then Redis).
  const detail = await api<{ status: string; execution_id?: string }>(B, 'GET', `/v1/workflows/executions/${watched}`);
  t.is(detail.status, 200, JSON.stringify(detail.body));
  t.is(detail.body.status, 'running');
  const stream = readSse(`${B.http}/v1/workflows/executions/${watched}/stream`, token, 60_000);

  await eventually(async () => {
    const rs = await rows(db, onA);
    const progressed = rs.every((r) => Number((r.current_state ?? 's0').slice(1)) >= 3 && r.status === 'running');
    return progressed ? true : undefined;
  }, 30_000, "A's runs to reach s3");
  t.true((await rows(db, onA)).every((r) => r.owner_node === `ctl-a-${suffix}`), 'A owns the runs it started');
  t.is(await a.kill('SIGKILL'), 'SIGKILL');
  const killedAt = Date.now();
  const interrupted = (await rows(db, onA)).filter((r) => r.status === 'running');
  t.true(interrupted.length > 0, 'A was killed while its runs were running');

  const all = [...onA, ...onB];
  const finished = await eventually(async () => {
    const rs = await rows(db, all);
    return rs.every((r) => r.status !== 'running') ? rs : undefined;
  }, 60_000, 'every run to finish on B');
  const tookOver = Date.now() - killedAt;
  t.log(`B finished A's ${interrupted.length} interrupted runs ${tookOver} ms after the kill`);
  for (const r of finished) {
    t.is(r.status, 'completed', `${r.id}: ${r.error ?? ''}`);
    t.is(r.owner_node, `ctl-b-${suffix}`, 'finished by the survivor');
  }
  for (const [i, id] of onA.entries()) {
    const r = finished.find((x) => x.id === id)!;
    t.is(r.blackboard.acc, expectedAcc(`a${i}`), 'continued from the last written state');
    t.true(r.epoch >= 1, 'claimed with a new epoch');
  }

  // Exactly-once records across the failover.
  const entered = await db.query<{ execution_id: string; state_name: string; iteration_number: number; n: number }>(
    `SELECT execution_id::TEXT AS execution_id, state_name, iteration_number, count(*)::INT4 AS n FROM workflow_events
     WHERE execution_id = ANY($1::UUID[]) AND type = 'WorkflowStateEntered' GROUP BY execution_id, state_name, iteration_number`,
    [all],
  );
  t.is(entered.rows.length, all.length * STATES, 'every state of every run entered');
  t.true(entered.rows.every((r) => r.n === 1 && r.iteration_number === 1), 'no state visit recorded twice');
  const completed = await db.query<{ n: number }>(
    `SELECT count(*)::INT4 AS n FROM workflow_events WHERE execution_id = ANY($1::UUID[]) AND type = 'WorkflowStateCompleted'`,
    [all],
  );
  t.is(completed.rows[0]!.n, all.length * STATES, 'each state completed once');
  for (const id of all) {
    const seqs = await db.query<{ seq: number }>('SELECT seq FROM workflow_events WHERE execution_id = $1 ORDER BY seq', [id]);
    t.deepEqual(seqs.rows.map((r) => r.seq), seqs.rows.map((_, i) => i + 1), `gap-free sequence of ${id}`);
  }

  // The stream opened on B saw the whole run, each event once and in order, through the failover.
  const events = await stream;
  const seqs = events.map((e) => e.id);
  t.deepEqual(seqs, seqs.map((_, i) => i + 1), 'SSE on B: every event once, in order');
  t.is(events.at(-1)?.event, 'WorkflowExecutionCompleted');
  // B answers for A's run: detail and logs.
  const after = await api<{ status: string; blackboard: Record<string, unknown> }>(B, 'GET', `/v1/workflows/executions/${watched}`);
  t.is(after.body.status, 'completed');
  t.is(after.body.blackboard.acc, expectedAcc('a0'));
  const logs = await api<{ events: unknown[]; total?: number }>(B, 'GET', `/v1/workflows/executions/${watched}/logs?limit=200`);
  t.is(logs.status, 200);
  t.is(logs.body.events.length, events.length);
  t.is(await b.kill('SIGTERM'), 0, b.stderr().slice(-2000));
});
