// spec.storage end to end on a real `orch up` node (PostgreSQL, podman via DOCKER_HOST, a real `orch fuse-daemon`):
//   - an Agent state's `volumes` ({{workflow.storage.workspace}} read-write at /data, a shared volume read-only at
//     /ref) are mounted into the agent's podman container through the FUSE daemon: the write reaches the workflow's
//     volume, the read-only one refuses writes (EROFS), and a write past size_limit_mb gets ENOSPC inside the
//     container (the FSAL reserves every chunk: used_bytes never passes the limit); a whole-file fs.write past it is
//     refused and leaves nothing;
//   - a second Agent state mounts the same workspace right after the first execution released it;
//   - the ContainerRun state gets the same volumes by name through the FUSE daemon (principal: the workflow run,
//     by grant) bound into its container (workspace read_only at /in, `ref` read-write at /scratch): it reads the
//     agent's file, its write to /in is refused, its write to /scratch lands in the volume and is counted, a write
//     past the limit gets ENOSPC; the mounts and grants are gone after the state;
//   - a ParallelContainerRun's steps share the run's mount of the workspace (read-only in one, read-write in the
//     other): the quick step's end does not unmount it under the slow one;
//   - the volumes are the run's (owner workflow_execution), the grants of the agent execution are gone at its end.
import test from 'ava';
import path from 'node:path';
import pg from 'pg';
import { DEFAULT_RUNTIME_IMAGE } from '../../src/agents/runtime/docker.ts';
import { eventually } from '../support/node-process.ts';
import { podmanScratch, startFuseNode, volumeFile, type VolumeJson as Vol } from '../support/podman-node.ts';
import { startScriptedLlm, textReply, toolCall, toolResultsSinceLastUser } from '../support/scripted-llm.ts';
import { api } from '../agents/execution-scenarios.ts';

const SCRIPT = [
  'echo hi > /data/x && cat /data/x',
  "grep -E ' /(data|ref) ' /proc/mounts",
  'if echo no > /ref/y; then echo RO-WRITE-OK; else echo RO-REFUSED; fi',
  'if dd if=/dev/zero of=/data/big bs=65536 count=48; then echo BIG-OK; else echo BIG-REFUSED; fi',
].join('; ');

// The next Agent state's execution mounts the same workspace right after the first one ended.
const AGAIN = "cat /data/x && echo two > /data/two && echo AGAIN-WROTE; grep -E ' /data ' /proc/mounts";

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: wf-writer, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: docker, model: default }
  task: { instruction: Write to the workflow volume. }
  execution: { mode: one-shot, llm_timeout_seconds: 20, iteration_timeout: 90, validation: [] }
  security:
    resources: { timeout: 150 }
  tools:
    - fs.write
    - name: cmd.run
      executor: builtin:cmd
      config: { subcommand_allowlist: { sh: [] } }
`;

const CHECK = [
  'cat /in/x',
  "grep -E ' /(in|scratch) ' /proc/mounts",
  'if echo no > /in/y; then echo CR-RO-WRITE-OK; else echo CR-RO-REFUSED; fi',
  'head -c 5000 /dev/zero > /scratch/out.bin && echo CR-WROTE',
  'if dd if=/dev/zero of=/scratch/huge bs=65536 count=48; then echo CR-HUGE-OK; else echo CR-HUGE-REFUSED; fi',
  'rm -f /scratch/huge',
].join('; ');

const WORKFLOW = `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: wf-storage, version: 1.0.0 }
spec:
  initial_state: produce
  storage:
    workspace: { storage_class: ephemeral, ttl_hours: 2, size_limit_mb: 1 }
    shared_volumes:
      - { name: ref, storage_class: ephemeral, ttl_hours: 3, size_limit_mb: 2 }
  states:
    produce:
      kind: Agent
      agent: wf-writer
      input: go
      timeout: 200s
      volumes:
        - { volume: '{{workflow.storage.workspace}}', mount_path: /data, access_mode: read-write }
        - { volume: '{{workflow.storage.shared_volumes.ref}}', mount_path: /ref, access_mode: read-only }
      transitions:
        - { condition: on_success, target: again }
    again:
      kind: Agent
      agent: wf-writer
      input: again
      timeout: 200s
      volumes:
        - { volume: workspace, mount_path: /data, access_mode: read-write }
      transitions:
        - { condition: on_success, target: check }
    check:
      kind: ContainerRun
      image: ${DEFAULT_RUNTIME_IMAGE}
      image_pull_policy: Never
      shell: true
      command: [ ${JSON.stringify(CHECK)} ]
      volumes:
        - { name: workspace, mount_path: /in, read_only: true }
        - { name: ref, mount_path: /scratch }
      transitions:
        - { condition: on_success, target: fanout }
    fanout:
      kind: ParallelContainerRun
      completion: all_succeed
      steps:
        - name: quick
          image: ${DEFAULT_RUNTIME_IMAGE}
          image_pull_policy: Never
          command: [ cat, /w/x ]
          volumes: [ { name: workspace, mount_path: /w, read_only: true } ]
        - name: slow
          image: ${DEFAULT_RUNTIME_IMAGE}
          image_pull_policy: Never
          shell: true
          command: [ "sleep 3; cat /w/x && echo slow > /w/slow.txt && echo SLOW-WROTE" ]
          volumes: [ { name: workspace, mount_path: /w } ]
      transitions: []
`;

test('podman + FUSE: Agent and ContainerRun states mount the workflow volumes with their access modes and size limits', async (t) => {
  const { dir, databaseUrl } = await podmanScratch(t, 'orch-wf-storage-node-');
  const prefix = path.join(dir, 'fuse');

  let results: string[] = [];
  let again = '';
  const llm = await startScriptedLlm((body) => {
    const done = toolResultsSinceLastUser(body).map((m) => String(m.content ?? ''));
    if (body.messages.some((m) => String(m.content ?? '').includes('Input:\nagain'))) {
      if (done.length === 0) return toolCall('cmd_run', { command: 'sh', args: ['-c', AGAIN] });
      again = done[0] ?? '';
      return textReply('done again');
    }
    results = done;
    if (done.length === 0) return toolCall('cmd_run', { command: 'sh', args: ['-c', SCRIPT] });
    if (done.length === 1) return toolCall('fs_write', { path: '/data/whole.txt', content: 'z'.repeat(1_100_000) });
    if (done.length === 2) return toolCall('fs_write', { path: '/ref/nope.txt', content: 'no' });
    return textReply('done');
  });
  t.teardown(() => llm.close());

  const { s, daemon } = await startFuseNode(t, { dir, id: 'wf-storage-node', llmUrl: llm.url, databaseUrl, prefix });
  t.true(daemon.fuse, 'the FUSE binding is loaded');

  const agent = await api<{ agent_id: string }>(s, 'POST', '/v1/agents', { manifest_yaml: AGENT });
  t.is(agent.status, 201, JSON.stringify(agent.body));
  const deployed = await api(s, 'POST', '/v1/workflows', { manifest_yaml: WORKFLOW });
  t.is(deployed.status, 201, JSON.stringify(deployed.body));
  const run = await api<{ execution_id: string }>(s, 'POST', '/v1/workflows/wf-storage/run', { input: {} });
  t.is(run.status, 201, JSON.stringify(run.body));
  const runId = run.body.execution_id;

  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  t.teardown(() => client.end());
  const row = await eventually(
    async () => {
      const r = (await client.query<{ status: string; error: string | null; blackboard: Record<string, any> }>('SELECT status, error, blackboard FROM workflow_executions WHERE id = $1', [runId])).rows[0];
      return r && ['completed', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
    },
    180_000,
    'the run to finish',
  );
  t.is(row.status, 'completed', `${row.error ?? ''} ${JSON.stringify(row.blackboard)} daemon: ${daemon.stderr()}`);

  // The run's volumes, with the manifest's terms.
  const listed = await api<{ volumes: Vol[] }>(s, 'GET', `/v1/volumes?owner_kind=workflow_execution&owner_ref=${runId}`);
  t.is(listed.status, 200);
  const ws = listed.body.volumes.find((v) => v.label === 'workspace')!;
  const ref = listed.body.volumes.find((v) => v.label === 'ref')!;
  t.like(ws, { storage_class: 'ephemeral', ttl_hours: 2, size_limit_bytes: 1024 * 1024 });
  t.like(ref, { storage_class: 'ephemeral', ttl_hours: 3, size_limit_bytes: 2 * 1024 * 1024 });
  t.is(listed.body.volumes.length, 2);

  // Inside the agent container: /data and /ref are FUSE mounts of the workflow volumes.
  const out = JSON.parse(results[0] ?? '{}') as { exit_code: number; stdout: string; stderr: string };
  t.regex(out.stdout, /^hi\n/, JSON.stringify(out));
  t.regex(out.stdout, /\/data fuse\.orch /, 'the workspace is a FUSE mount at /data');
  t.regex(out.stdout, /\/ref fuse\.orch ro,/, 'the read-only shared volume is mounted read-only');
  t.regex(out.stdout, /RO-REFUSED/);
  t.regex(out.stderr, /Read-only file system/);
  t.regex(out.stdout, /BIG-REFUSED/, 'a write past size_limit_mb fails inside the container');
  t.regex(out.stderr, /No space left on device/);
  // The whole-file tool write past the limit is refused and leaves nothing; the read-only mount refuses the tool too.
  t.regex(results[1] ?? '', /ENOSPC|no space/i, results[1]);
  t.regex(results[2] ?? '', /read-only|not writable|denied/i, results[2]);

  const file = (v: Vol, p: string): Promise<{ status: number; text: string }> => volumeFile(s, v.id, p);
  t.deepEqual(await file(ws, '/x'), { status: 200, text: 'hi\n' }, 'the agent wrote into the workflow workspace');
  t.is((await file(ws, '/whole.txt')).status, 404, 'nothing of the refused whole-file write');
  const quota = await api<{ used_bytes: number; size_limit_bytes: number }>(s, 'GET', `/v1/volumes/${ws.id}/quota`);
  t.true(quota.body.used_bytes <= quota.body.size_limit_bytes, JSON.stringify(quota.body));
  t.true(quota.body.used_bytes > 3, 'the chunks of /big that fitted are counted');

  // The agent execution mounted the run's volumes by id; its grants ended with it.
  const exec = (await client.query<{ id: string; manifest: { spec: { volumes: { volume_id?: string; mount_path: string; access_mode: string }[] } } }>(
    'SELECT id, manifest FROM executions WHERE workflow_execution_id = $1 ORDER BY created_at', [runId])).rows;
  t.is(exec.length, 2);
  t.deepEqual(
    exec[0]!.manifest.spec.volumes.map((v) => [v.volume_id, v.mount_path, v.access_mode]),
    [[ws.id, '/data', 'read-write'], [ref.id, '/ref', 'read-only']],
  );
  const events = await client.query<{ operation: string; path: string; status: string }>(
    'SELECT operation, path, status FROM storage_events WHERE execution_id = $1 AND volume_id = $2 ORDER BY seq', [exec[0]!.id, ws.id]);
  const ops = events.rows.map((r) => `${r.operation} ${r.path} ${r.status}`);
  t.true(ops.includes('create /x OK'), ops.join('\n'));
  t.true(ops.some((o) => o.startsWith('write /big RESOURCE_EXHAUSTED')), ops.join('\n'));
  await eventually(async () => {
    const r = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM volume_grants WHERE execution_id = $1', [exec[0]!.id]);
    return r.rows[0]!.n === 0 ? true : undefined;
  }, 20_000, 'the grants to be revoked');

  // The second Agent state (volume named `workspace`) mounted the same volume once the first execution let it go.
  const againOut = JSON.parse(again || '{}') as { stdout?: string };
  t.regex(againOut.stdout ?? '', /^hi\nAGAIN-WROTE\n/, again);
  t.regex(againOut.stdout ?? '', /\/data fuse\.orch rw,/, again);
  t.deepEqual(exec[1]!.manifest.spec.volumes.map((v) => [v.volume_id, v.mount_path, v.access_mode]), [[ws.id, '/data', 'read-write']]);
  t.deepEqual(await file(ws, '/two'), { status: 200, text: 'two\n' });

  // The ContainerRun state: the same volumes bind-mounted by name with their read_only flags.
  const check = row.blackboard.check as { exit_code: number; stdout: string; stderr: string };
  t.is(check.exit_code, 0, JSON.stringify(check));
  t.regex(check.stdout, /^hi\n/, 'the container reads the agent\'s file from the workspace');
  t.regex(check.stdout, /\/in fuse\.orch ro,/, 'the workspace is the FUSE mount, bound read-only');
  t.regex(check.stdout, /\/scratch fuse\.orch rw,/, 'the shared volume is the FUSE mount, read-write');
  t.regex(check.stdout, /CR-RO-REFUSED/);
  t.regex(check.stderr, /Read-only file system/);
  t.regex(check.stdout, /CR-WROTE/);
  t.regex(check.stdout, /CR-HUGE-REFUSED/, 'a write past size_limit_mb fails inside the ContainerRun container');
  t.regex(check.stderr, /No space left on device/);
  t.is((await file(ref, '/out.bin')).text.length, 5000, 'the container wrote into the shared volume');
  const refQuota = await api<{ used_bytes: number }>(s, 'GET', `/v1/volumes/${ref.id}/quota`);
  t.is(refQuota.body.used_bytes, 5000, 'every write of the container was counted (through the FSAL)');
  // ParallelContainerRun: both steps share the run's one FUSE mount of the workspace; the quick step's end does not
  // unmount it under the slow one.
  const fanout = row.blackboard.fanout as { status: string; output: Record<string, { exit_code: number; stdout: string; stderr: string }> };
  t.is(fanout.status, 'success', JSON.stringify(fanout));
  t.is(fanout.output.quick?.stdout, 'hi\n');
  t.is(fanout.output.slow?.stdout, 'hi\nSLOW-WROTE\n', JSON.stringify(fanout.output.slow));
  t.deepEqual(await file(ws, '/slow.txt'), { status: 200, text: 'slow\n' });

  // The state's mounts are gone with it: unmounted, the run's grants revoked.
  t.is((await client.query('SELECT 1 FROM volume_grants WHERE execution_id = $1', [runId])).rowCount, 0);
  const fsalOps = await client.query<{ operation: string; path: string; status: string }>(
    'SELECT operation, path, status FROM storage_events WHERE execution_id = $1 AND volume_id = $2 ORDER BY seq', [runId, ref.id]);
  t.true(fsalOps.rows.some((r) => r.operation === 'write' && r.path === '/huge' && r.status === 'RESOURCE_EXHAUSTED'), 'the container\'s writes went through the FSAL as the run');
});
