// Issue 8 acceptance: an agent container (podman) sees its manifest volumes at their mount paths through the FUSE
// layer. A real `orch up` node (PostgreSQL, podman via DOCKER_HOST) with `spec.fuse.address` pointing at a real
// `orch fuse-daemon` whose FSAL is the node's runtime gRPC port; the scripted model runs `cmd.run` in the container:
// `echo hi > /data/x; cat /data/x` and a write to the read-only /ro. Then the file is seen through the VolumeService
// (HTTP), the StorageEvents of the FSAL calls are in the database, the daemon unmounted and the grants are gone.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { eventually } from '../support/node-process.ts';
import { podmanScratch, startFuseNode, volumeFile, type VolumeJson as Vol } from '../support/podman-node.ts';
import { startScriptedLlm, textReply, toolCall, toolResultsSinceLastUser } from '../support/scripted-llm.ts';
import { api } from '../agents/execution-scenarios.ts';

async function mountsUnder(prefix: string): Promise<string[]> {
  const table = await readFile('/proc/self/mounts', 'utf8');
  return table
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((p) => p.startsWith(`${prefix}/`));
}

const SCRIPT = [
  'echo hi > /data/x && cat /data/x',
  "grep -E ' /(data|ro) ' /proc/mounts",
  'if echo no > /ro/y; then echo RO-WRITE-OK; else echo RO-REFUSED; fi',
].join('; ');

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: fuse-volumes, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: docker, model: default }
  task: { instruction: Write to the data volume. }
  execution: { mode: one-shot, llm_timeout_seconds: 20, iteration_timeout: 90, validation: [] }
  security:
    resources: { timeout: 150 }
  volumes:
    - { name: data, mount_path: /data, access_mode: read-write, size_limit: 1Mi, storage_class: ephemeral, ttl_hours: 2 }
    - { name: ro, mount_path: /ro, access_mode: read-only, size_limit: 64Ki }
  tools:
    - fs.write
    - name: cmd.run
      executor: builtin:cmd
      config: { subcommand_allowlist: { sh: [] } }
`;

test('podman: an agent container sees its volumes through the FUSE daemon; writes reach the volume, read-only refuses', async (t) => {
  const { dir, databaseUrl } = await podmanScratch(t, 'orch-fuse-agent-');
  const prefix = path.join(dir, 'fuse');

  let toolResult = '';
  const llm = await startScriptedLlm((body, i) => {
    if (i === 0) return toolCall('cmd_run', { command: 'sh', args: ['-c', SCRIPT] });
    if (i === 1) {
      toolResult = toolResultsSinceLastUser(body)[0]?.content ?? '';
      return toolCall('fs_write', { path: '/data/from-tool.txt', content: 'tool' });
    }
    return textReply('done');
  });
  t.teardown(() => llm.close());

  const { s, daemon } = await startFuseNode(t, { dir, id: 'fuse-node', llmUrl: llm.url, databaseUrl, prefix });
  t.true(daemon.fuse, 'the FUSE binding is loaded');

  const agent = await api<{ agent_id: string }>(s, 'POST', '/v1/agents', { manifest_yaml: AGENT });
  t.is(agent.status, 201, JSON.stringify(agent.body));
  const started = await api<{ execution_id?: string; id?: string }>(s, 'POST', '/v1/executions', { agent_id: agent.body.agent_id, input: 'go' });
  t.true(started.status < 300, JSON.stringify(started.body));
  const executionId = started.body.execution_id ?? started.body.id ?? '';

  const final = await eventually(
    async () => {
      const r = await api<{ status: string; reason?: string }>(s, 'GET', `/v1/executions/${executionId}`);
      return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
    },
    150_000,
    'the execution to end',
  );
  t.is(final.status, 'completed', `${JSON.stringify(final)} daemon: ${daemon.stderr()}`);

  // Inside the container: the write and read through the mount, /data a FUSE mount, /ro refused by the kernel.
  const out = JSON.parse(toolResult) as { exit_code: number; stdout: string; stderr: string };
  t.regex(out.stdout, /^hi\n/, JSON.stringify(out));
  t.regex(out.stdout, /\/data fuse\.orch /, 'the container sees the FUSE mount at /data');
  t.regex(out.stdout, /\/ro fuse\.orch ro,/, 'the read-only volume is bound read-only');
  t.regex(out.stdout, /RO-REFUSED/);
  t.regex(out.stderr, /Read-only file system/);

  // The volumes: owned by the execution, from the manifest's sizes, class and TTL.
  const listed = await api<{ volumes: Vol[] }>(s, 'GET', `/v1/volumes?owner_kind=execution&owner_ref=${executionId}`);
  t.is(listed.status, 200);
  const data = listed.body.volumes.find((v) => v.label === 'data');
  const ro = listed.body.volumes.find((v) => v.label === 'ro');
  t.truthy(data);
  t.truthy(ro);
  t.like(data, { storage_class: 'ephemeral', ttl_hours: 2, size_limit_bytes: 1024 * 1024 });
  t.like(ro, { storage_class: 'ephemeral', ttl_hours: 24, size_limit_bytes: 64 * 1024 });

  // The file through the VolumeService, with exact quota accounting (the write went through the FSAL).
  const content = await volumeFile(s, data!.id, '/x');
  t.is(content.status, 200);
  t.is(content.text, 'hi\n');
  const quota = await api<{ used_bytes: number }>(s, 'GET', `/v1/volumes/${data!.id}/quota`);
  t.is(quota.body.used_bytes, 3 + 4);
  t.is((await volumeFile(s, data!.id, '/from-tool.txt')).text, 'tool', 'fs.write of the loop wrote into the volume');
  const roFiles = await api<{ entries: unknown[] }>(s, 'GET', `/v1/volumes/${ro!.id}/files?path=/`);
  t.deepEqual(roFiles.body.entries, [], 'nothing was written to the read-only volume');

  // StorageEvents of the container's operations, persisted by the FSAL.
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  t.teardown(() => client.end());
  const events = await client.query<{ operation: string; path: string; status: string; bytes: string }>(
    'SELECT operation, path, status, bytes FROM storage_events WHERE execution_id = $1 AND volume_id = $2 ORDER BY seq',
    [executionId, data!.id],
  );
  const ops = events.rows.map((r) => `${r.operation} ${r.path} ${r.status}`);
  t.true(ops.includes('create /x OK'), ops.join('\n'));
  t.true(events.rows.some((r) => r.operation === 'write' && r.path === '/x' && r.status === 'OK' && Number(r.bytes) === 3), ops.join('\n'));
  t.true(ops.some((o) => o.startsWith('read /x OK')), ops.join('\n'));
  // fs.write acted through the VolumeService (one whole-file write event), not through the kernel mount (create + write).
  t.true(ops.includes('write /from-tool.txt OK'), ops.join('\n'));
  t.false(ops.includes('create /from-tool.txt OK'), ops.join('\n'));

  // Execution end: Unmount (nothing left under the prefix) and the grants revoked.
  await eventually(async () => ((await mountsUnder(prefix)).length === 0 ? true : undefined), 20_000, 'the daemon to unmount the volumes');
  const grants = await eventually(
    async () => {
      const r = await client.query('SELECT count(*)::int AS n FROM volume_grants WHERE execution_id = $1', [executionId]);
      return (r.rows[0] as { n: number }).n === 0 ? 0 : undefined;
    },
    20_000,
    'the grants to be revoked',
  );
  t.is(grants, 0);

  daemon.child.kill('SIGTERM');
  t.is(await daemon.exited, 0, daemon.stderr());
});
