// An in-process node for the observability tests (the spans and metrics live in this process): a fresh PostgreSQL
// database, process isolation, a scripted OpenAI-compatible model (real HTTP) whose script writes a file with
// fs.write and then answers, and a token of a random tenant so metric labels are this test's own.
import type { ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ensureDevIdentity } from '../../src/auth/dev-identity.ts';
import { loadNodeConfig } from '../../src/config/load.ts';
import { silentLogger, type Logger } from '../../src/logging/logger.ts';
import { startNode, type RunningNode } from '../../src/node/node.ts';
import { createTestDatabase } from '../support/pg.ts';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm.ts';

export const USAGE = { prompt_tokens: 11, completion_tokens: 7 };

export const AGENT = (name: string): string => `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: ${name}, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Write note.txt and say done. }
  execution: { mode: one-shot, llm_timeout_seconds: 20, iteration_timeout: 60 }
  security: { resources: { timeout: 120 } }
  tools: [ fs.write, fs.read ]
`;

export const WORKFLOW = (name: string): string => `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: ${name}, version: 1.0.0 }
spec:
  initial_state: first
  states:
    first:
      kind: System
      command: 'update_blackboard {"a": 1}'
      transitions: [ { condition: on_success, target: second } ]
    second:
      kind: System
      command: 'update_blackboard {"b": 2}'
      transitions: []
`;

export interface Harness {
  node: RunningNode;
  llm: ScriptedLlm;
  http: string;
  token: string;
  tenant: string;
  api<T>(method: string, url: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: T }>;
  /** Deploys the agent, runs one execution to its end; the execution id. */
  runExecution(agent: string): Promise<string>;
  /** Deploys the workflow, runs it to its end; the workflow execution id. */
  runWorkflow(name: string): Promise<string>;
}

async function until<T>(probe: () => Promise<T | undefined>, what: string, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export async function startHarness(t: ExecutionContext, logger: Logger = silentLogger()): Promise<Harness> {
  const llm = await startScriptedLlm((body) =>
    body.messages.some((m) => m.role === 'tool')
      ? { content: 'done', usage: USAGE }
      : { tool_calls: [{ name: 'fs_write', arguments: { path: 'note.txt', content: 'hello' } }], usage: USAGE },
  );
  t.teardown(() => llm.close());
  const database = await createTestDatabase({ migrated: true });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-obs-'));
  const nodeId = `obs-${randomBytes(3).toString('hex')}`;
  const config = loadNodeConfig({
    text: `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: ${nodeId} }
spec:
  node: { id: ${nodeId}, role: hybrid }
  http: { bind: 127.0.0.1, port: 0 }
  grpc: { port: 0 }
  cluster: { cluster_grpc_port: 0 }
  database: { url: "${database.url}" }
  data_dir: ${dir}
  runtime: { default_isolation: process }
  llm_providers:
    - { name: scripted, type: openai, endpoint: "${llm.url}", api_key: test-key, models: [ { alias: default, model: scripted-1 } ] }
`,
    env: {},
  });
  const node = await startNode(config, logger);
  t.teardown(async () => {
    await node.stop();
    await database.drop();
    await rm(dir, { recursive: true, force: true });
  });
  const tenant = `obs-${randomBytes(4).toString('hex')}`;
  const dev = await ensureDevIdentity(config.dataDir);
  const token = await dev.sign({ tenant, role: 'tenant-admin', serviceAccount: false });
  const http = node.addresses.http;
  const api = async <T>(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${http}${url}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
  };
  return {
    node,
    llm,
    http,
    token,
    tenant,
    api,
    async runExecution(agent) {
      const dep = await api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: AGENT(agent) });
      if (dep.status !== 201) throw new Error(`deploy: ${dep.status} ${JSON.stringify(dep.body)}`);
      const started = await api<{ execution_id: string }>('POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'go' });
      if (started.status !== 200 && started.status !== 201) throw new Error(`execute: ${started.status} ${JSON.stringify(started.body)}`);
      const id = started.body.execution_id;
      await until(async () => {
        const d = await api<{ status: string; reason?: string }>('GET', `/v1/executions/${id}`);
        if (d.body.status === 'failed') throw new Error(`execution failed: ${d.body.reason}`);
        return d.body.status === 'completed' ? true : undefined;
      }, `execution ${id}`);
      return id;
    },
    async runWorkflow(name) {
      const dep = await api('POST', '/v1/workflows', { manifest_yaml: WORKFLOW(name) });
      if (dep.status !== 201 && dep.status !== 200) throw new Error(`deploy workflow: ${dep.status} ${JSON.stringify(dep.body)}`);
      const run = await api<{ execution_id: string }>('POST', `/v1/workflows/${name}/run`, { input: {} });
      if (run.status >= 300) throw new Error(`run workflow: ${run.status} ${JSON.stringify(run.body)}`);
      const id = run.body.execution_id;
      await until(async () => {
        const d = await api<{ status: string; error?: string }>('GET', `/v1/workflows/executions/${id}`);
        if (d.body.status === 'failed') throw new Error(`workflow failed: ${JSON.stringify(d.body)}`);
        return d.body.status === 'completed' ? true : undefined;
      }, `workflow ${id}`);
      return id;
    },
  };
}
