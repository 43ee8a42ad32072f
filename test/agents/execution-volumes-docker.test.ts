// spec.volumes of a podman execution on a node WITHOUT a FUSE daemon configured: each volume's directory is
// bind-mounted directly at its mount path (read-only for a read-only volume). The container's write lands in the
// VolumeService's volume, and the end of the execution re-measures the volume so its quota is exact again.
import test from 'ava';
import { eventually } from '../support/node-process.ts';
import { podmanScratch, startPodmanNode, volumeFile } from '../support/podman-node.ts';
import { startScriptedLlm, textReply, toolCall, toolResultsSinceLastUser } from '../support/scripted-llm.ts';
import { api } from './execution-scenarios.ts';

const SCRIPT = ['echo hi > /data/x && cat /data/x', "grep -E ' /(data|ro) ' /proc/mounts", 'if echo no > /ro/y; then echo RO-WRITE-OK; else echo RO-REFUSED; fi'].join('; ');

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: bind-volumes, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: docker, model: default }
  task: { instruction: Write to the data volume. }
  execution: { mode: one-shot, llm_timeout_seconds: 20, iteration_timeout: 90, validation: [] }
  security:
    resources: { timeout: 150 }
  volumes:
    - { name: data, mount_path: /data, access_mode: read-write, size_limit: 1Mi }
    - { name: ro, mount_path: /ro, access_mode: read-only, size_limit: 64Ki }
  tools:
    - name: cmd.run
      executor: builtin:cmd
      config: { subcommand_allowlist: { sh: [] } }
`;

test('podman without a FUSE daemon: volumes are bound directly; the write reaches the volume and is counted', async (t) => {
  const { dir, databaseUrl } = await podmanScratch(t, 'orch-bind-volumes-');
  let toolResult = '';
  const llm = await startScriptedLlm((body, i) => {
    if (i === 0) return toolCall('cmd_run', { command: 'sh', args: ['-c', SCRIPT] });
    toolResult = toolResultsSinceLastUser(body)[0]?.content ?? '';
    return textReply('done');
  });
  t.teardown(() => llm.close());
  const { s } = await startPodmanNode(t, { dir, id: 'bind-node', llmUrl: llm.url, databaseUrl });

  const agent = await api<{ agent_id: string }>(s, 'POST', '/v1/agents', { manifest_yaml: AGENT });
  t.is(agent.status, 201, JSON.stringify(agent.body));
  const started = await api<{ execution_id?: string; id?: string }>(s, 'POST', '/v1/executions', { agent_id: agent.body.agent_id, input: 'go' });
  const executionId = started.body.execution_id ?? started.body.id ?? '';
  const final = await eventually(
    async () => {
      const r = await api<{ status: string }>(s, 'GET', `/v1/executions/${executionId}`);
      return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
    },
    150_000,
    'the execution to end',
  );
  t.is(final.status, 'completed', JSON.stringify(final));

  const out = JSON.parse(toolResult) as { stdout: string; stderr: string };
  t.regex(out.stdout, /^hi\n/, JSON.stringify(out));
  t.notRegex(out.stdout, /fuse/, 'no FUSE mount without a daemon');
  t.regex(out.stdout, /RO-REFUSED/);
  t.regex(out.stderr, /Read-only file system/);

  const listed = await api<{ volumes: { id: string; label: string }[] }>(s, 'GET', `/v1/volumes?owner_kind=execution&owner_ref=${executionId}`);
  const data = listed.body.volumes.find((v) => v.label === 'data');
  t.truthy(data);
  t.is((await volumeFile(s, data!.id, '/x')).text, 'hi\n');
  // Recounted at the end of the execution (the direct write bypassed the reservation).
  const used = await eventually(async () => {
    const q = await api<{ used_bytes: number }>(s, 'GET', `/v1/volumes/${data!.id}/quota`);
    return q.body.used_bytes === 3 ? 3 : undefined;
  }, 20_000, 'the volume to be recounted');
  t.is(used, 3);
});
