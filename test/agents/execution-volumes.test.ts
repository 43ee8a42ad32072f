// ExecutionVolumes (src/agents/execution/volumes.ts) on real PostgreSQL, a real VolumeService and the real FsalService
// over gRPC: spec.volumes become volumes owned by the execution with the manifest's terms, granted with the access
// mode and mount path; a resumed execution finds the same volumes; the end revokes the grants; the FSAL judges an
// execution's own volume by its grant (read-only stays read-only); an unreachable FUSE daemon is a clear error.
import test from 'ava';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import type { AgentManifest } from '../../src/agents/manifest/types.ts';
import { ExecutionVolumes, toolMountsOf } from '../../src/agents/execution/volumes.ts';
import { findGrant } from '../../src/fsal/grants.ts';
import { FsalServiceService as S } from '../../src/gen/orch/fsal/v1/fsal.js';
import { silentLogger } from '../../src/logging/logger.ts';
import { agentManifest, fsalFixture, TENANT, type FsalFixture } from '../fsal/support.ts';

function manifestWith(volumes: AgentManifest['spec']['volumes'], filesystem?: { read: string[]; write: string[] }): AgentManifest {
  const m = agentManifest(filesystem);
  return { ...m, spec: { ...m.spec, volumes } };
}

const VOLUMES: AgentManifest['spec']['volumes'] = [
  { name: 'data', mount_path: '/data', access_mode: 'read-write', size_limit: '2Mi', storage_class: 'ephemeral', ttl_hours: 3 },
  { name: 'ref', mount_path: '/ref', access_mode: 'read-only', size_limit: '64Ki' },
  { name: 'keep', mount_path: '/keep', storage_class: 'persistent' },
];

let f: FsalFixture;
test.before(async () => {
  f = await fsalFixture();
});
test.after.always(async () => {
  await f?.close();
});

function attachFor(executionId: string, manifest: AgentManifest, fuseAddress?: string): ExecutionVolumes {
  return new ExecutionVolumes(
    { db: f.db, volumes: f.volumes, ...(fuseAddress ? { fuseAddress } : {}), logger: silentLogger() },
    { id: executionId, tenantId: TENANT, manifest },
  );
}

test('spec.volumes become execution-owned volumes with the manifest terms, granted; a resume finds the same ones', async (t) => {
  const exec = await f.execution();
  const first = await attachFor(exec, manifestWith(VOLUMES)).attach();
  t.deepEqual(
    first.map((m) => [m.name, m.sandboxPath, m.readOnly, m.fuse]),
    [
      ['data', '/data', false, false],
      ['ref', '/ref', true, false],
      ['keep', '/keep', false, false],
    ],
  );
  const vols = await f.volumes.list(TENANT, { ownerKind: 'execution', ownerRef: exec });
  t.is(vols.length, 3);
  const byLabel = new Map(vols.map((v) => [v.label, v]));
  t.like(byLabel.get('data'), { storage_class: 'ephemeral', ttl_hours: 3, size_limit_bytes: 2 * 1024 * 1024 });
  t.like(byLabel.get('ref'), { storage_class: 'ephemeral', ttl_hours: 24, size_limit_bytes: 64 * 1024 });
  t.like(byLabel.get('keep'), { storage_class: 'persistent', ttl_hours: null, expires_at: null, size_limit_bytes: 1024 * 1024 * 1024 });
  for (const m of first) {
    t.is(m.hostPath, await f.volumes.hostPath(TENANT, m.volumeId), 'without a FUSE daemon the directory is bound directly');
    t.like(await findGrant(f.db, exec, m.volumeId), { access_mode: m.readOnly ? 'read-only' : 'read-write', mount_path: m.sandboxPath, tenant_id: TENANT });
  }

  // A resumed execution (a new incarnation): the same volumes, nothing new created.
  const again = attachFor(exec, manifestWith(VOLUMES));
  const second = await again.attach();
  t.deepEqual(
    second.map((m) => m.volumeId),
    first.map((m) => m.volumeId),
  );
  t.is((await f.volumes.list(TENANT, { ownerKind: 'execution', ownerRef: exec })).length, 3);

  // A direct bind lets the container write to the disk past the accounting: the end re-measures the volume.
  const data = second[0]!;
  await writeFile(path.join(data.hostPath, 'direct.txt'), 'twelve bytes');
  await again.detach({ ended: false });
  t.is((await f.volumes.quota(TENANT, data.volumeId)).used_bytes, 12);
  t.truthy(await findGrant(f.db, exec, data.volumeId), 'a hand-over keeps the grants');
  await attachFor(exec, manifestWith(VOLUMES)).detach({ ended: true });
  for (const m of first) t.is(await findGrant(f.db, exec, m.volumeId), undefined, 'the end revokes the grants');
});

test('the FSAL judges an execution-owned volume by its grant: read-only refuses writes, the policy sees the mount path', async (t) => {
  const exec = await f.execution({ filesystem: { read: [], write: ['/data/**'] } });
  const mounts = await attachFor(exec, manifestWith(VOLUMES.slice(0, 2), { read: [], write: ['/data/**'] })).attach();
  const [data, ref] = mounts;
  const w = await f.rpc(S.create, { execution_id: exec, volume_id: data!.volumeId, path: 'ok.txt', mode: 0, exclusive: true });
  t.is(w.code, status.OK, w.details);
  const write = await f.rpc(S.write, { execution_id: exec, volume_id: data!.volumeId, path: 'ok.txt', offset: 0, data: Buffer.from('abc') });
  t.is(write.code, status.OK, write.details);
  const refused = await f.rpc(S.create, { execution_id: exec, volume_id: ref!.volumeId, path: 'no.txt', mode: 0, exclusive: true });
  t.is(refused.code, status.PERMISSION_DENIED, refused.details);
  const read = await f.rpc(S.getAttr, { execution_id: exec, volume_id: ref!.volumeId, path: '' });
  t.is(read.code, status.OK, 'a read-only volume still serves reads');
  t.deepEqual(await f.volumes.listDir(TENANT, ref!.volumeId, '/'), []);
});

test('a configured FUSE daemon that does not answer fails the attach with a clear error', async (t) => {
  const exec = await f.execution();
  const ev = attachFor(exec, manifestWith(VOLUMES.slice(0, 1)), '127.0.0.1:1');
  const err = await t.throwsAsync(() => ev.attach());
  t.regex(err?.message ?? '', /the FUSE daemon at 127\.0\.0\.1:1 refused to mount volume data/);
  await ev.detach({ ended: true });
});

test('a manifest without volumes attaches nothing', async (t) => {
  const exec = await f.execution();
  t.deepEqual(await attachFor(exec, manifestWith([])).attach(), []);
  t.deepEqual(await f.volumes.list(TENANT, { ownerKind: 'execution', ownerRef: exec }), []);
});

test('toolMountsOf (SEAL callers): /workspace plus the existing volumes with their ids; nothing is created', async (t) => {
  const exec = await f.execution();
  const manifest = manifestWith(VOLUMES.slice(0, 2));
  t.deepEqual(
    (await toolMountsOf(f.volumes, f.dataDir, { id: exec, tenantId: TENANT, manifest })).map((m) => m.sandboxPath),
    ['/workspace'],
    'before the loop attached them, the volumes are not there',
  );
  t.deepEqual(await f.volumes.list(TENANT, { ownerKind: 'execution', ownerRef: exec }), []);
  const attached = await attachFor(exec, manifest).attach();
  const mounts = await toolMountsOf(f.volumes, f.dataDir, { id: exec, tenantId: TENANT, manifest });
  t.deepEqual(
    mounts.map((m) => [m.sandboxPath, m.readOnly, m.volumeId]),
    [
      ['/workspace', false, undefined],
      ['/data', false, attached[0]!.volumeId],
      ['/ref', true, attached[1]!.volumeId],
    ],
  );
});
