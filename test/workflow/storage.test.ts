// spec.storage on real PostgreSQL: the workspace and shared volumes are made through the VolumeService before the
// first state runs (their ids in the template scope), owned by the run with the manifest's size limit and a TTL
// counted from the run's start; provisioning twice answers the same ids; a missing persistent volume fails the run
// naming it; a size-limited workspace refuses over-quota writes with ENOSPC.
import test, { type ExecutionContext } from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { recoverAll } from '../../src/actors/recovery.ts';
import { OrchError } from '../../src/errors/catalog.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { VolumeService } from '../../src/volumes/service.ts';
import { getWorkflowExecution } from '../../src/workflow/engine/repo.ts';
import { provisionWorkflowStorage, WORKFLOW_OWNER_KIND, WorkflowStorage } from '../../src/workflow/engine/storage.ts';
import { containerRunRunner } from '../../src/workflow/states/container-run.ts';
import { stateVolumes } from '../../src/workflow/states/agent-execution.ts';
import { withExtraVolumes } from '../../src/agents/execution/service.ts';
import type { AgentManifest } from '../../src/agents/manifest/types.ts';
import type { StateRunner } from '../../src/workflow/engine/runner-types.ts';
import { manifest, startEngine, TENANT, type EngineHarness } from './engine-harness.ts';
import { engineProblem, IMAGE, runtime } from './container-run-support.ts';

async function withStorage(t: ExecutionContext, o: { db?: { url: string }; dataDir?: string; containers?: boolean } = {}): Promise<{ h: EngineHarness; volumes: VolumeService; dataDir: string }> {
  let storage: WorkflowStorage | undefined;
  // As the node wires it without a FUSE daemon: the volumes' directories bound into the containers, recounted after.
  const runners = o.containers
    ? { ContainerRun: containerRunRunner({ runtime, resolveVolume: (ref) => storage!.acquire(ref), settleVolume: (ref) => storage!.release(ref) }) as StateRunner<never> }
    : undefined;
  const h = await startEngine(t, { storage: { provision: (row) => storage!.provision(row) }, ...(o.db ? { db: o.db } : {}), ...(runners ? { runners } : {}) });
  const dataDir = o.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), 'orch-wf-storage-')));
  if (!o.dataDir) t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const volumes = new VolumeService({ db: h.db, dataDir, nodeId: 'node-a', logger: silentLogger() });
  storage = new WorkflowStorage(volumes);
  return { h, volumes, dataDir };
}

const STORAGE = `  storage:
    workspace: { storage_class: ephemeral, ttl_hours: 2, size_limit_mb: 1 }
    shared_volumes:
      - { name: cache, storage_class: ephemeral, ttl_hours: 5, size_limit_mb: 3 }
`;

function withSpec(yaml: string, spec: string): string {
  return yaml.replace('spec:\n', `spec:\n${spec}`);
}

test('spec.storage volumes exist before the first state, owned by the run, ids in workflow.storage', async (t) => {
  const { h, volumes } = await withStorage(t);
  await h.deploy(withSpec(manifest('st', 'show', `    show:
      kind: System
      command: 'update_blackboard {"ws": "{{workflow.storage.workspace}}", "cache": "{{workflow.storage.shared_volumes.cache}}"}'
      transitions: []
`), STORAGE));
  const id = await h.run('st');
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  const owned = await volumes.list(TENANT, { ownerKind: WORKFLOW_OWNER_KIND, ownerRef: id });
  t.is(owned.length, 2);
  const ws = owned.find((v) => v.label === 'workspace')!;
  const cache = owned.find((v) => v.label === 'cache')!;
  t.is(row.blackboard.ws, ws.id);
  t.is(row.blackboard.cache, cache.id);
  t.like(ws, { storage_class: 'ephemeral', size_limit_bytes: 1024 * 1024, ttl_hours: 2, tenant_id: TENANT, owner_kind: 'workflow_execution', owner_ref: id });
  t.like(cache, { size_limit_bytes: 3 * 1024 * 1024, ttl_hours: 5 });
  // The TTL counts from the run's start.
  const expiry = new Date(ws.expires_at!).getTime() - row.started_at.getTime();
  t.true(Math.abs(expiry - 2 * 3600 * 1000) < 10_000, `workspace expires ${expiry} ms after the start`);
});

test('provisioning is idempotent: a resumed run finds the same volumes', async (t) => {
  const { h, volumes } = await withStorage(t);
  await h.deploy(withSpec(manifest('idem', 'a', `    a:
      kind: System
      command: 'update_blackboard {"ws": "{{workflow.storage.workspace}}"}'
      transitions: []
`), STORAGE));
  const id = await h.run('idem');
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  const again = await provisionWorkflowStorage(volumes, row);
  const third = await provisionWorkflowStorage(volumes, (await getWorkflowExecution(h.db, id))!);
  t.deepEqual(again, third);
  t.is(again.workspace, row.blackboard.ws as string);
  t.is((await volumes.list(TENANT, { ownerKind: WORKFLOW_OWNER_KIND, ownerRef: id })).length, 2);
});

test('a run resumed after its node stopped (waiting on a Human state) finds its volumes: same ids, no duplicates', async (t) => {
  const a = await withStorage(t);
  await a.h.deploy(withSpec(manifest('resume', 'before', `    before:
      kind: System
      command: 'update_blackboard {"ws_before": "{{workflow.storage.workspace}}", "cache_before": "{{workflow.storage.shared_volumes.cache}}"}'
      transitions: [{ target: gate }]
    gate:
      kind: Human
      prompt: go on?
      transitions: [{ target: after }]
    after:
      kind: System
      command: 'update_blackboard {"ws_after": "{{workflow.storage.workspace}}", "cache_after": "{{workflow.storage.shared_volumes.cache}}"}'
      transitions: []
`), STORAGE));
  const id = await a.h.run('resume');
  await a.h.waitFor(id, 'waiting_for_human_input');
  t.is((await a.volumes.list(TENANT, { ownerKind: WORKFLOW_OWNER_KIND, ownerRef: id })).length, 2);
  // The node goes away (its actors stop without writing); a new incarnation on the same database and data dir
  // recovers the run, which provisions its storage again before going on.
  await a.h.actors.shutdown(2000);
  const b = await withStorage(t, { db: { url: a.h.url! }, dataDir: a.dataDir });
  const reports = await recoverAll(b.h.actors, b.h.cap.kinds, silentLogger());
  t.true(reports.some((r) => r.keys.includes(id)));
  await b.h.waitFor(id, 'waiting_for_human_input');
  t.like(await b.h.cap.runs.signal(TENANT, id, 'yes'), { signalled: true });
  const row = await b.h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  const owned = await b.volumes.list(TENANT, { ownerKind: WORKFLOW_OWNER_KIND, ownerRef: id });
  t.is(owned.length, 2, 'no volume made twice');
  t.is(row.blackboard.ws_after, row.blackboard.ws_before);
  t.is(row.blackboard.cache_after, row.blackboard.cache_before);
  t.deepEqual(owned.map((v) => v.id).sort(), [row.blackboard.ws_before, row.blackboard.cache_before].sort());
});

test('a run that outlived an ephemeral volume\'s TTL (reaped while it waited) fails naming it instead of getting a new one', async (t) => {
  const { h, volumes } = await withStorage(t);
  await h.deploy(withSpec(manifest('late', 'a', `    a:
      kind: System
      command: 'true'
      transitions: []
`), STORAGE));
  const row = await h.waitFor(await h.run('late'));
  t.is(row.status, 'completed', row.error ?? '');
  const owned = await volumes.list(TENANT, { ownerKind: WORKFLOW_OWNER_KIND, ownerRef: row.id });
  await volumes.delete(TENANT, owned.find((v) => v.label === 'workspace')!.id);
  const later = row.started_at.getTime() + 3 * 3600 * 1000; // the workspace's ttl_hours is 2, the cache's 5
  const err = await t.throwsAsync(provisionWorkflowStorage(volumes, row, later));
  t.regex(err!.message, /ephemeral volume "workspace" has expired: its ttl_hours \(2\)/);
  t.is((await volumes.list(TENANT, { ownerKind: WORKFLOW_OWNER_KIND, ownerRef: row.id })).length, 1, 'nothing new was made');
});

test('a persistent shared volume is used by its id; a missing one fails the run naming it, creating nothing', async (t) => {
  const { h, volumes } = await withStorage(t);
  const existing = await volumes.create({ tenantId: TENANT, ownerSubject: 'alice', label: 'datasets', sizeLimitBytes: 4096 });
  const other = await volumes.create({ tenantId: 'other-tenant', ownerSubject: 'bob', label: 'theirs', sizeLimitBytes: 4096 });
  const states = `    a:
      kind: System
      command: 'update_blackboard {"data": "{{workflow.storage.shared_volumes.data}}"}'
      transitions: []
`;
  const spec = (vid: string) => `  storage:
    workspace: { storage_class: ephemeral }
    shared_volumes:
      - { name: data, storage_class: persistent, volume_id: ${vid} }
`;
  await h.deploy(withSpec(manifest('pers-ok', 'a', states), spec(existing.id)));
  const ok = await h.waitFor(await h.run('pers-ok'));
  t.is(ok.status, 'completed', ok.error ?? '');
  t.is(ok.blackboard.data, existing.id);

  for (const [name, vid] of [['pers-missing', randomUUID()], ['pers-foreign', other.id]] as const) {
    await h.deploy(withSpec(manifest(name, 'a', states), spec(vid)));
    const id = await h.run(name);
    const row = await h.waitFor(id);
    t.is(row.status, 'failed');
    t.regex(row.error ?? '', new RegExp(`persistent volume ${vid} of shared volume "data".*does not exist in tenant ${TENANT}`));
    t.false('a' in row.blackboard, 'no state ran');
    t.is((await volumes.list(TENANT, { ownerKind: WORKFLOW_OWNER_KIND, ownerRef: id })).length, 0, 'the workspace was not made');
  }
});

test('a size-limited workspace refuses writes beyond size_limit_mb with ENOSPC (VolumeService path)', async (t) => {
  const { h, volumes } = await withStorage(t);
  await h.deploy(withSpec(manifest('quota', 'a', `    a:
      kind: System
      command: 'update_blackboard {"ws": "{{workflow.storage.workspace}}"}'
      transitions: []
`), STORAGE));
  const row = await h.waitFor(await h.run('quota'));
  const ws = row.blackboard.ws as string;
  await volumes.writeFile(TENANT, ws, '/a.bin', Buffer.alloc(900 * 1024));
  const err = await t.throwsAsync(volumes.writeFile(TENANT, ws, '/b.bin', Buffer.alloc(200 * 1024)));
  t.true(err instanceof OrchError);
  t.like((err as OrchError).details as object, { code: 'ENOSPC', size_limit_bytes: 1024 * 1024 });
  t.is((await volumes.get(TENANT, ws)).used_bytes, 900 * 1024);
  // Nothing partial: the refused file does not exist at all.
  t.deepEqual((await volumes.listDir(TENANT, ws, '/')).map((f) => [f.name, f.size]), [['a.bin', 900 * 1024]]);
});

test('ContainerRun (no FUSE daemon): the workflow volumes are bound at their mount paths, read_only refuses writes, the writes are counted', async (t) => {
  const problem = await engineProblem();
  if (problem) return t.fail(problem);
  const { h, volumes } = await withStorage(t, { containers: true });
  await h.deploy(withSpec(manifest('bind', 'c', `    c:
      kind: ContainerRun
      image: ${IMAGE}
      image_pull_policy: Never
      shell: true
      command: [ "head -c 3000 /dev/zero > /w/out.bin && echo WROTE; if echo no > /ro/y; then echo RO-WRITE-OK; else echo RO-REFUSED; fi; ls /w" ]
      volumes:
        - { name: workspace, mount_path: /w }
        - { name: cache, mount_path: /ro, read_only: true }
      transitions: []
`), STORAGE));
  const id = await h.run('bind');
  const row = await h.waitFor(id, undefined, 60_000);
  t.is(row.status, 'completed', row.error ?? '');
  const c = row.blackboard.c as { exit_code: number; stdout: string; stderr: string };
  t.is(c.exit_code, 0, JSON.stringify(c));
  t.regex(c.stdout, /^WROTE\nRO-REFUSED\nout\.bin\n$/);
  t.regex(c.stderr, /Read-only file system/);
  const owned = await volumes.list(TENANT, { ownerKind: WORKFLOW_OWNER_KIND, ownerRef: id });
  const ws = owned.find((v) => v.label === 'workspace')!;
  const cache = owned.find((v) => v.label === 'cache')!;
  t.is((await volumes.readFile(TENANT, ws.id, '/out.bin')).length, 3000, 'the container wrote into the workspace volume');
  t.is((await volumes.get(TENANT, ws.id)).used_bytes, 3000, 'recounted after the container');
  t.deepEqual(await volumes.listDir(TENANT, cache.id, '/'), [], 'nothing reached the read-only volume');
});

test('Agent state volumes resolve to the run\'s spec.storage volumes (rendered id or name); anything else fails naming it', (t) => {
  const ws = randomUUID();
  const cache = randomUUID();
  const ctx = { stateName: 'write', storage: { workspace: ws, shared: { cache } }, render: (x: string) => x.replace('{{workflow.storage.workspace}}', ws.toUpperCase()) };
  t.deepEqual(
    stateVolumes([
      { volume: '{{workflow.storage.workspace}}', mount_path: '/data', access_mode: 'read-write' },
      { volume: 'cache', mount_path: '/c', access_mode: 'read-only' },
    ], ctx),
    [
      { volumeId: ws, name: 'workspace', mountPath: '/data', accessMode: 'read-write' },
      { volumeId: cache, name: 'cache', mountPath: '/c', accessMode: 'read-only' },
    ],
  );
  const foreign = randomUUID();
  t.throws(() => stateVolumes([{ volume: foreign, mount_path: '/x', access_mode: 'read-write' }], ctx), {
    message: new RegExp(`volumes\\[0\\] of state "write": "${foreign}" .*is not a volume of this workflow's spec\\.storage \\(declared: workspace, cache\\)`),
  });
  t.throws(() => stateVolumes([{ volume: 'nope', mount_path: '/x', access_mode: 'read-only' }], { ...ctx, storage: { shared: {} } }), { message: /"nope".*declared: none/ });
});

test('an execution started with a workflow\'s volumes mounts them by volume_id; an agent volume at the same path gives way', (t) => {
  const m = { spec: { volumes: [{ name: 'data', mount_path: '/data' }, { name: 'keep', mount_path: '/keep', access_mode: 'read-only' }] } } as unknown as AgentManifest;
  const id = randomUUID();
  const out = withExtraVolumes(m, [{ volumeId: id.toUpperCase(), name: 'workspace', mountPath: '/data', accessMode: 'read-only' }]);
  t.deepEqual(out.spec.volumes, [
    { name: 'keep', mount_path: '/keep', access_mode: 'read-only' },
    { name: 'workspace', mount_path: '/data', access_mode: 'read-only', volume_id: id },
  ]);
  t.is(m.spec.volumes.length, 2, 'the agent\'s manifest is not changed');
  t.throws(() => withExtraVolumes(m, [{ volumeId: 'nope', name: 'w', mountPath: '/d', accessMode: 'read-write' }]), { message: /volume_id must be a UUID/ });
  t.throws(() => withExtraVolumes(m, [{ volumeId: id, name: 'w', mountPath: 'rel', accessMode: 'read-write' }]), { message: /mount_path must be absolute/ });
  t.throws(() => withExtraVolumes(m, [{ volumeId: id, name: 'w', mountPath: '/d', accessMode: 'rw' as 'read-write' }]), { message: /access_mode/ });
});
