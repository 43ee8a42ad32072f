// The FSAL with a workflow run as the calling "execution" (the containers of its ContainerRun states, mounted by the
// FUSE daemon under the run's id): a granted volume is served with the grant's access mode and the quota, with no
// agent filesystem policy; no grant, another tenant, an ended run and an unknown id are refused. Real gRPC, real
// PostgreSQL, real volume directories.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { FsalServiceService as S } from '../../src/gen/orch/fsal/v1/fsal.js';
import { eventually, fsalFixture, TENANT, type FsalFixture } from './support.ts';

let f: FsalFixture;
test.before(async () => {
  f = await fsalFixture();
});
test.after.always(async () => {
  await f?.close();
});

async function workflowRun(tenant = TENANT, runStatus = 'running'): Promise<string> {
  const id = randomUUID();
  await f.db.query(
    `INSERT INTO workflow_executions (id, tenant_id, workflow_id, workflow_name, workflow_version, manifest, input, status, blackboard, context, visits, ancestry)
     VALUES ($1, $2, $3, 'wf', '1.0.0', '{}'::JSONB, '{}'::JSONB, $4, '{}'::JSONB, '{}'::JSONB, '{}'::JSONB, '[]'::JSONB)`,
    [id, tenant, randomUUID(), runStatus],
  );
  return id;
}

test('a workflow run reaches a volume granted to it: writes within the quota, ENOSPC beyond, read-only refuses', async (t) => {
  const run = await workflowRun();
  const rw = await f.volume({ limit: 100 });
  const ro = await f.volume();
  await f.grant(run, rw, 'read-write', '/scratch');
  await f.grant(run, ro, 'read-only', '/in');
  await f.volumes.writeFile(TENANT, ro, '/seed.txt', 'seed');

  const created = await f.rpc(S.create, { execution_id: run, volume_id: rw, path: 'out.txt', mode: 0, exclusive: true });
  t.is(created.code, status.OK, created.details);
  const wrote = await f.rpc(S.write, { execution_id: run, volume_id: rw, path: 'out.txt', offset: 0, data: Buffer.from('hello') });
  t.is(wrote.code, status.OK, wrote.details);
  const big = await f.rpc(S.write, { execution_id: run, volume_id: rw, path: 'out.txt', offset: 5, data: Buffer.alloc(200) });
  t.is(big.code, status.RESOURCE_EXHAUSTED, big.details);
  t.is(String(await f.volumes.readFile(TENANT, rw, '/out.txt')), 'hello', 'nothing of the refused write');

  const read = await f.rpc(S.read, { execution_id: run, volume_id: ro, path: 'seed.txt', offset: 0, length: 10 });
  t.is(read.code, status.OK, read.details);
  const refused = await f.rpc(S.create, { execution_id: run, volume_id: ro, path: 'new.txt', mode: 0, exclusive: true });
  t.is(refused.code, status.PERMISSION_DENIED);
  t.regex(refused.details, /read-only/);

  await f.fsal.flushEvents();
  const events = await f.db.query<{ operation: string; status: string }>('SELECT operation, status FROM storage_events WHERE execution_id = $1 AND volume_id = $2 ORDER BY seq', [run, rw]);
  t.deepEqual(events.rows.map((r) => `${r.operation} ${r.status}`), ['create OK', 'write OK', 'write RESOURCE_EXHAUSTED']);
});

test('a workflow run is refused a volume without a grant, from another tenant, once ended, and an unknown id is NOT_FOUND', async (t) => {
  const run = await workflowRun();
  const vol = await f.volume();
  const ungranted = await f.rpc(S.getAttr, { execution_id: run, volume_id: vol, path: '' });
  t.is(ungranted.code, status.PERMISSION_DENIED);
  t.regex(ungranted.details, /was not granted volume/);

  await f.grant(run, vol, 'read-write', '/w');
  t.is((await f.rpc(S.getAttr, { execution_id: run, volume_id: vol, path: '' })).code, status.OK);
  t.is((await f.rpc(S.getAttr, { execution_id: run, volume_id: vol, path: '' }, 'globex')).code, status.NOT_FOUND, 'another tenant does not see the run');

  await f.db.query(`UPDATE workflow_executions SET status = 'completed' WHERE id = $1`, [run]);
  const ended = await eventually(() => f.rpc(S.getAttr, { execution_id: run, volume_id: vol, path: '' }), status.PERMISSION_DENIED);
  t.is(ended.code, status.PERMISSION_DENIED);
  t.regex(ended.details, /has ended \(completed\)/);

  t.is((await f.rpc(S.getAttr, { execution_id: randomUUID(), volume_id: vol, path: '' })).code, status.NOT_FOUND);
});
