// orch.execute.intent with container isolation: the node's default isolation is docker (podman), so the generated
// code-writing agent (javascript: the local runtime image carries node) writes main.js and runs it with cmd.run inside
// a container; the pipeline reports the program's output. The model is the scripted OpenAI-compatible server.
import test from 'ava';
import { startTestNode } from '../support/in-process-node.ts';
import { startScriptedLlm, toolResultsSinceLastUser, type ChatRequest, type ScriptedAnswer } from '../support/scripted-llm.ts';

const CODER = `\`\`\`yaml
apiVersion: orch.dev/v1
kind: Agent
metadata:
  name: js-coder
  version: 1.0.0
  description: Writes and runs javascript programs
  labels: { pipeline-role: code-writer, language: javascript }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: "MARK_CODER Write javascript for the task, save it with fs.write and run it with cmd.run." }
  execution: { mode: one-shot, validation: [ { type: exit_code, expected: 0 } ] }
  tools: [ fs.write, cmd.run ]
\`\`\``;

function script(body: ChatRequest): ScriptedAnswer {
  const all = body.messages.map((m) => String(m.content ?? '')).join('\n');
  if (String(body.messages[0]?.content ?? '').includes('You write agent manifests')) return { content: CODER };
  if (all.includes('MARK_CODER')) {
    const results = toolResultsSinceLastUser(body);
    if (results.length === 0) {
      return { tool_calls: [{ name: 'fs_write', arguments: { path: '/workspace/main.js', content: 'const fs = require("fs");\nconsole.log([1, 2, 3].reduce((a, b) => a + b), fs.existsSync("/run/.containerenv") ? "in-container" : "on-host");\n' } }] };
    }
    if (results.length === 1) return { tool_calls: [{ name: 'cmd_run', arguments: { command: 'node', args: ['/workspace/main.js'] } }] };
    const stdout = /"stdout":\s*"([^"]*)"/.exec(String(results[1]?.content ?? ''))?.[1]?.replace(/\\n/g, '').trim() ?? '';
    return { content: `Output: ${stdout}` };
  }
  return { status: 400, message: 'unexpected request' };
}

test('the pipeline runs the generated agent in a container (podman) and reports the program output', async (t) => {
  const llm = await startScriptedLlm(script);
  t.teardown(() => llm.close());
  const { node, token, mcp: connect } = await startTestNode(t, { name: 'pld', llmUrl: llm.url, isolation: 'docker' });
  const mcp = await connect(await token(undefined, 'operator'), 'pipeline-docker-test');
  const call = async (name: string, args: Record<string, unknown>): Promise<Record<string, any>> => {
    const r = (await mcp.callTool({ name, arguments: args }, undefined, { timeout: 180_000 })) as { isError?: boolean; content: { text: string }[] };
    if (r.isError) throw new Error(r.content[0]?.text);
    return JSON.parse(r.content[0]?.text ?? '{}') as Record<string, any>;
  };

  const started = await call('orch.execute.intent', { intent: 'Add 1, 2 and 3', language: 'javascript' });
  t.like(started, { status: 'started', reused_existing_agent: false, agent: { name: 'js-coder' } });
  const waited = await call('orch.execute.wait', { execution_id: started.pipeline_execution_id, poll_interval_seconds: 1, timeout_seconds: 170 });
  t.is(waited.status, 'completed', JSON.stringify(waited));
  const st = await call('orch.execute.status', { pipeline_execution_id: started.pipeline_execution_id });
  t.like(st, { status: 'completed', reused_existing_agent: false, final_result: { output: 'Output: 6 in-container', language: 'javascript' } });
  // "in-container": the program saw podman's marker file /run/.containerenv (which this host does not have).
  const row = await node.db.query<{ status: string }>('SELECT status FROM executions WHERE id = $1', [st.final_result.execution_id]);
  t.is(row.rows[0]?.status, 'completed');
});
