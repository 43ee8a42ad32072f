// Execution throughput and latency on a real node (its own process) with a scripted model answering at once:
//  - time from ExecuteAgent (gRPC) to `iteration_started`, which the loop emits when the bootstrap's first
//    `generate` arrives (sandbox start + bootstrap boot + one event write);
//  - executions per second: a trivial one-shot agent, `concurrency` at a time, start to terminal event.
import { credentials, Metadata } from '@grpc/grpc-js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { OrchRuntimeClient, type ExecutionEvent } from '../src/gen/orch/runtime/v1/runtime.js';
import { startOrchNode } from '../test/support/node-process.ts';
import { startScriptedLlm } from '../test/support/scripted-llm.ts';

export interface ExecutionFigures {
  isolation: string;
  firstGenerateMs: number[];
  executionsPerSecond: number;
}

const AGENT = (isolation: string) => `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: trivial, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: ${isolation}, model: default }
  task: { instruction: Say ok. }
  execution: { mode: one-shot }
`;

function execute(client: InstanceType<typeof OrchRuntimeClient>, md: Metadata, agentId: string): Promise<{ firstGenerateMs: number; totalMs: number }> {
  const t0 = performance.now();
  let first = -1;
  return new Promise((resolve, reject) => {
    const stream = client.executeAgent({ agent_id: agentId, input: 'go', context_json: '' }, md);
    stream.on('data', (e: ExecutionEvent) => {
      if (e.event?.$case === 'iteration_started' && first < 0) first = performance.now() - t0;
      if (e.event?.$case === 'execution_failed') reject(new Error(`execution failed: ${e.event.value.reason}`));
    });
    stream.on('error', reject);
    stream.on('end', () => resolve({ firstGenerateMs: first, totalMs: performance.now() - t0 }));
  });
}

export async function benchExecutions(isolation: 'process' | 'docker', count: number, concurrency: number): Promise<ExecutionFigures> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-exec-'));
  const llm = await startScriptedLlm(() => ({ content: 'ok' }));
  const config = path.join(dir, 'node.yaml');
  const dockerHost = process.env.DOCKER_HOST || 'unix:///run/orch-podman/podman.sock';
  await writeFile(
    config,
    `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: bench }
spec:
  node: { id: bench-${isolation}, role: hybrid }
  llm_providers: [ { name: s, type: openai, endpoint: "${llm.url}", api_key: k, models: [ { alias: default, model: m } ] } ]
  runtime: { default_isolation: ${isolation}${isolation === 'docker' ? `, docker_host: "${dockerHost}"` : ''} }
`,
  );
  const node = await startOrchNode({ ORCH_CONFIG: config, ORCH_DATA_DIR: path.join(dir, 'data'), ORCH_LOG_LEVEL: 'warn', DATABASE_URL: undefined, REDIS_URL: undefined });
  const token = node.banner.dev_token ?? '';
  const client = new OrchRuntimeClient(node.banner.grpc, credentials.createInsecure());
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  try {
    const dep = await fetch(`${node.banner.http}/v1/agents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ manifest_yaml: AGENT(isolation) }),
    });
    const { agent_id } = (await dep.json()) as { agent_id: string };
    // Warm-up, then one at a time for the latency figure.
    await execute(client, md, agent_id);
    const firstGenerateMs: number[] = [];
    for (let i = 0; i < 10; i++) firstGenerateMs.push((await execute(client, md, agent_id)).firstGenerateMs);
    // Throughput: `concurrency` in flight until `count` are done.
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) {
          next++;
          await execute(client, md, agent_id);
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    return { isolation, firstGenerateMs, executionsPerSecond: count / seconds };
  } finally {
    client.close();
    await node.kill('SIGTERM');
    await llm.close();
    await rm(dir, { recursive: true, force: true });
  }
}
