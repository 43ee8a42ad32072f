// Issue 15, item 6: `tools: [fs.glob, orch.system.info, web.fetch]` deployed without complaint and the model was
// offered only two of them (the loop dropped every orch.* tool without a word). Now every tool of spec.tools is
// offered and runs through the catalog, and a name that is no tool is refused at deploy with 422 naming it.
// Real node (process isolation), real HTTP, the scripted model.
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startScriptedLlm, type ChatRequest } from '../support/scripted-llm.ts';
import { api, sseEvents, startStack, stepOf } from './execution-scenarios.ts';

const AGENT = (tools: string) => `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: tool-user, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Tell me about the node. }
  execution: { mode: iterative, max_iterations: 1, llm_timeout_seconds: 30, iteration_timeout: 120, validation: [] }
  tools: ${tools}
`;

test('every tool of spec.tools is offered to the model (orch.* too); a name that is no tool is refused at deploy', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-loop-tools-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const llm = await startScriptedLlm((body) => (stepOf(body as ChatRequest).toolsDone === 0 ? { tool_calls: [{ name: 'orch_system_info', arguments: {} }] } : { content: 'done' }));
  t.teardown(() => llm.close());
  const s = await startStack(t, { dir, isolation: 'process' }, llm);

  const typo = await api<{ error: string; errors: { field: string; message: string }[] }>(s, 'POST', '/v1/agents', { manifest_yaml: AGENT('[fs.glob, orch.sytem.info, web.fetch]') });
  t.is(typo.status, 422, JSON.stringify(typo.body));
  t.deepEqual(typo.body.errors.map((e) => e.field), ['spec.tools[1]']);
  t.regex(typo.body.errors[0]?.message ?? '', /unknown tool "orch\.sytem\.info"/);

  const dep = await api<{ agent_id: string }>(s, 'POST', '/v1/agents', { manifest_yaml: AGENT('[fs.glob, orch.system.info, web.fetch]') });
  t.is(dep.status, 201, JSON.stringify(dep.body));
  const run = await api<{ execution_id: string }>(s, 'POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'which node is this?' });
  t.is(run.status, 200, JSON.stringify(run.body));
  const events = await sseEvents(s, run.body.execution_id);
  t.truthy(events.find((e) => 'execution_completed' in e), JSON.stringify(events));

  const first = llm.requests[0] as ChatRequest;
  t.deepEqual((first.tools ?? []).map((d) => d.function.name), ['fs_glob', 'orch_system_info', 'web_fetch']);
  const last = llm.requests.at(-1) as ChatRequest;
  const result = last.messages.find((m) => m.role === 'tool')?.content ?? '';
  t.regex(String(result), /"node_id":"n-/, 'orch.system.info ran and answered the model');
});
