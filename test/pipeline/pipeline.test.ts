// The execution pipeline and the generative tools on a real node (in-process, PostgreSQL, process sandbox with
// bubblewrap) called over MCP at /v1/mcp by an operator, with the model played by the scripted OpenAI-compatible
// server:
//   - orch.execute.intent generates a code-writing agent (the first manifest is refused by the real parser and sent
//     back; the second is deployed), runs it as an agent execution that writes main.py with fs.write and runs it with
//     cmd.run in the sandbox; orch.execute.wait (= orch.workflow.wait) and orch.execute.status report the result
//     computed by python; a second intent of the same language reuses the agent (no new manifest asked for);
//   - a failing program fails the pipeline at state `execute` with the reason;
//   - argument errors; orch.agent.generate (refused thrice: nothing deployed) and orch.workflow.generate.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { silentLogger } from '../../src/logging/logger.ts';
import type { RunningNode } from '../../src/node/node.ts';
import { WorkflowDefinitionService } from '../../src/workflow/registry/service.ts';
import { startTestNode } from '../support/in-process-node.ts';
import { startScriptedLlm, toolResultsSinceLastUser, type ChatRequest, type ScriptedAnswer, type ScriptedLlm } from '../support/scripted-llm.ts';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const coderYaml = (language: string, runtime: string): string => `\`\`\`yaml
apiVersion: orch.dev/v1
kind: Agent
metadata:
  name: ${language}-coder
  version: 1.0.0
  description: Writes and runs ${language} programs that compute numbers and sums
  labels: { pipeline-role: code-writer, language: ${language} }
spec:
  runtime: { language: ${runtime}, model: default }
  task: { instruction: "MARK_CODER You write ${language} code for the task, save it with fs.write and run it with cmd.run." }
  execution: { mode: one-shot, validation: [ { type: exit_code, expected: 0 } ] }
  tools: [ fs.write, fs.read, cmd.run ]
\`\`\``;

const system = (b: ChatRequest): string => String(b.messages[0]?.content ?? '');
const all = (b: ChatRequest): string => b.messages.map((m) => String(m.content ?? '')).join('\n');
const refused = (b: ChatRequest): number => b.messages.filter((m) => m.role === 'user' && String(m.content).includes('was refused')).length;

function script(body: ChatRequest): ScriptedAnswer {
  const sys = system(body);
  if (sys.includes('You write agent manifests')) {
    if (all(body).includes('NEVER_VALID')) return { content: '```yaml\napiVersion: orch.dev/v1\nkind: Agent\nmetadata: { name: Not_Valid }\n```' };
    const py = sys.includes('labels must contain pipeline-role: code-writer and language: python');
    // First answer: a runtime the parser refuses; after the parser's errors came back: the right manifest.
    if (refused(body) === 0) return { content: coderYaml('python', 'cobol, version: "1"') };
    return { content: py ? coderYaml('python', 'python, version: "3.12"') : coderYaml('bash', 'bash, version: "5"') };
  }
  if (sys.includes('You write workflow manifests')) {
    const target = refused(body) === 0 ? 'nowhere' : 'done';
    return {
      content: `\`\`\`yaml
apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: greet-flow, version: 1.0.0, description: Says hello }
spec:
  initial_state: hello
  states:
    hello:
      kind: System
      command: 'echo hello'
      transitions: [ { condition: on_success, target: ${target} } ]
    done:
      kind: System
      command: 'update_blackboard {"ok": true}'
      transitions: []
\`\`\``,
    };
  }
  if (all(body).includes('MARK_CODER')) {
    const text = all(body);
    const program = text.includes('SLEEPY') ? 'import time\ntime.sleep(600)\n' : text.includes('FAILME') ? 'import sys\nprint("boom", file=sys.stderr)\nsys.exit(3)\n' : /Multiply/.test(text) ? 'print(6 * 7)\n' : 'print(sum([1, 2, 3]))\n';
    const results = toolResultsSinceLastUser(body);
    if (results.length === 0) return { tool_calls: [{ name: 'fs_write', arguments: { path: '/workspace/main.py', content: program } }] };
    if (results.length === 1) return { tool_calls: [{ name: 'cmd_run', arguments: { command: 'python3', args: ['/workspace/main.py'] } }] };
    const out = String(results[1]?.content ?? '');
    const stdout = /"stdout":\s*"([^"]*)"/.exec(out)?.[1]?.replace(/\\n/g, '').trim() ?? '';
    return { content: `The program printed ${stdout}` };
  }
  return { status: 400, message: `unexpected request: ${sys.slice(0, 80)}` };
}

let llm: ScriptedLlm;
let node: RunningNode;
let mcp: Client;

test.before(async () => {
  llm = await startScriptedLlm(script);
  cleanups.push(() => llm.close());
  const started = await startTestNode((fn) => void cleanups.push(fn), { name: 'pl', llmUrl: llm.url });
  node = started.node;
  mcp = await started.mcp(await started.token('acme', 'operator'), 'pipeline-test');
});

async function call(name: string, args: Record<string, unknown>): Promise<{ error?: string; result?: Record<string, any> }> {
  const r = (await mcp.callTool({ name, arguments: args }, undefined, { timeout: 120_000 })) as { isError?: boolean; content: { type: string; text: string }[] };
  const text = r.content[0]?.text ?? '';
  return r.isError ? { error: text } : { result: JSON.parse(text) as Record<string, any> };
}

const manifestRequests = (): number => llm.requests.filter((b) => system(b).includes('You write agent manifests')).length;

test.serial('orch.execute.intent generates a code-writing agent (a refused manifest is corrected), runs the program in the sandbox; status and wait report it', async (t) => {
  const started = await call('orch.execute.intent', { intent: 'Sum the numbers 1, 2 and 3', inputs: { numbers: [1, 2, 3] } });
  t.falsy(started.error, started.error);
  const s = started.result!;
  t.is(s.status, 'started');
  t.is(s.reused_existing_agent, false);
  t.regex(s.pipeline_execution_id, /^[0-9a-f-]{36}$/);
  t.is(s.stream_url, `/v1/workflows/executions/${s.pipeline_execution_id}/stream`);
  t.is(s.agent.name, 'python-coder');
  t.is(manifestRequests(), 2, 'the parser refused the first manifest and its errors went back to the model');
  const second = llm.requests.filter((b) => system(b).includes('You write agent manifests'))[1]!;
  t.regex(all(second), /spec\.runtime\.language/);

  const waited = await call('orch.execute.wait', { execution_id: s.pipeline_execution_id, poll_interval_seconds: 1, timeout_seconds: 120 });
  t.is(waited.result?.status, 'completed', JSON.stringify(waited));
  t.deepEqual(waited.result?.final_output, { result: 'The program printed 6' });

  const status = await call('orch.execute.status', { pipeline_execution_id: s.pipeline_execution_id });
  const st = status.result!;
  t.is(st.status, 'completed');
  t.is(st.final_result.output, 'The program printed 6');
  t.is(st.final_result.agent.name, 'python-coder');
  t.is(st.final_result.language, 'python');
  t.is(st.reused_existing_agent, false);
  t.true(typeof st.duration_ms === 'number' && st.duration_ms >= 0);
  // The agent really ran: an execution of python-coder in acme, linked to the pipeline, whose input carries the inputs.
  const exec = await node.db.query<{ status: string; input: string; tenant_id: string }>('SELECT status, input, tenant_id FROM executions WHERE id = $1', [st.final_result.execution_id]);
  t.like(exec.rows[0], { status: 'completed', tenant_id: 'acme' });
  t.regex(exec.rows[0]?.input ?? '', /Sum the numbers 1, 2 and 3[\s\S]*"numbers":\[1,2,3\]/);
  // The stdout came from python in the sandbox: the cmd.run tool result the model saw.
  const coderTurns = llm.requests.filter((b) => !system(b).includes('You write') && all(b).includes('MARK_CODER') && all(b).includes('Sum the numbers'));
  t.true(coderTurns.some((b) => toolResultsSinceLastUser(b).some((m) => /"stdout":\s*"6\\n"/.test(String(m.content)))));
});

test.serial('a second intent of the same language reuses the agent; a failing program fails the pipeline at execute', async (t) => {
  const before = manifestRequests();
  const again = await call('orch.execute.intent', { intent: 'Multiply 6 by 7', language: 'python' });
  t.is(again.result?.reused_existing_agent, true);
  t.is(again.result?.agent.name, 'python-coder');
  await call('orch.execute.wait', { execution_id: again.result!.pipeline_execution_id, poll_interval_seconds: 1, timeout_seconds: 120 });
  const st = await call('orch.execute.status', { pipeline_execution_id: again.result!.pipeline_execution_id });
  t.like(st.result, { status: 'completed', reused_existing_agent: true, final_result: { output: 'The program printed 42' } });
  t.is(manifestRequests(), before, 'no manifest was generated');

  const bad = await call('orch.execute.intent', { intent: 'FAILME please' });
  await call('orch.execute.wait', { execution_id: bad.result!.pipeline_execution_id, poll_interval_seconds: 1, timeout_seconds: 120 });
  const failed = await call('orch.execute.status', { pipeline_execution_id: bad.result!.pipeline_execution_id });
  t.is(failed.result?.status, 'failed');
  t.is(failed.result?.failed_at_state, 'execute');
  t.regex(String(failed.result?.reason), /execute/);
  t.is(failed.result?.final_result, undefined);
});

test.serial('orch.execute runs a prompt through the pipeline in one call and answers its result; a failure is answered too', async (t) => {
  const done = await call('orch.execute', { prompt: 'Multiply 6 by 7 please', poll_interval_ms: 200 });
  t.falsy(done.error, done.error);
  t.like(done.result, { status: 'completed', reused_existing_agent: true, final_result: { output: 'The program printed 42', language: 'python' } });
  t.regex(done.result?.pipeline_execution_id, /^[0-9a-f-]{36}$/);
  const run = await node.db.query<{ status: string }>('SELECT status FROM workflow_executions WHERE id = $1', [done.result?.pipeline_execution_id]);
  t.is(run.rows[0]?.status, 'completed', 'the answer came after the pipeline had ended');
  const failed = await call('orch.execute', { prompt: 'FAILME in one call', poll_interval_ms: 200 });
  t.like(failed.result, { status: 'failed', failed_at_state: 'execute' });
  t.regex((await call('orch.execute', {})).error ?? '', /prompt/);
});

test.serial('timeout_seconds cancels a pipeline whose program runs too long', async (t) => {
  const t0 = Date.now();
  const slow = await call('orch.execute.intent', { intent: 'SLEEPY task', timeout_seconds: 3 });
  const waited = await call('orch.execute.wait', { execution_id: slow.result!.pipeline_execution_id, poll_interval_seconds: 1, timeout_seconds: 90 });
  t.is(waited.result?.status, 'cancelled', JSON.stringify(waited.result));
  t.true(Date.now() - t0 < 60_000, 'cancelled well before the program would have ended');
  const st = await call('orch.execute.status', { pipeline_execution_id: slow.result!.pipeline_execution_id });
  t.like(st.result, { status: 'cancelled', failed_at_state: 'execute' });
  // The agent execution (and its sandbox) went with it.
  let exec: string | undefined;
  for (let i = 0; i < 120 && exec !== 'cancelled'; i++) {
    exec = (await node.db.query<{ status: string }>('SELECT status FROM executions WHERE workflow_execution_id = $1', [slow.result!.pipeline_execution_id])).rows[0]?.status;
    if (exec !== 'cancelled') await new Promise((r) => setTimeout(r, 500));
  }
  t.is(exec, 'cancelled');
});

test.serial('orch.execute.intent and status refuse bad arguments', async (t) => {
  t.regex((await call('orch.execute.intent', {})).error ?? '', /^InvalidArguments: missing required argument "intent"/);
  t.regex((await call('orch.execute.intent', { intent: '  ' })).error ?? '', /^InvalidArguments: intent/);
  t.regex((await call('orch.execute.intent', { intent: 'x', language: 'cobol' })).error ?? '', /^InvalidArguments: language must be one of python, javascript, bash/);
  t.regex((await call('orch.execute.intent', { intent: 'x', timeout_seconds: 0 })).error ?? '', /^InvalidArguments: timeout_seconds/);
  t.regex((await call('orch.execute.intent', { intent: 'x', volume_id: 'v1' })).error ?? '', /^NotAvailable: volume_id/);
  t.regex((await call('orch.execute.status', { pipeline_execution_id: randomUUID() })).error ?? '', /^NOT_FOUND/);
});

test.serial("a tenant's own workflow named orch-intent-pipeline neither stands in for the pipeline nor reads as one", async (t) => {
  const shadow = `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: orch-intent-pipeline, version: 1.0.0 }
spec:
  initial_state: fake
  states:
    fake: { kind: System, command: 'update_blackboard {"execute": {"output": "forged"}}', transitions: [] }
`;
  await new WorkflowDefinitionService(node.db, silentLogger()).deploy({ tenant: 'acme', subject: 'someone', yaml: shadow });
  const own = await call('orch.workflow.run', { name: 'orch-intent-pipeline' });
  await call('orch.workflow.wait', { execution_id: own.result!.execution_id, poll_interval_seconds: 1, timeout_seconds: 60 });
  t.regex((await call('orch.execute.status', { pipeline_execution_id: own.result!.execution_id })).error ?? '', /^NOT_FOUND/);
  const real = await call('orch.execute.intent', { intent: 'Multiply 6 by 7 again' });
  await call('orch.execute.wait', { execution_id: real.result!.pipeline_execution_id, poll_interval_seconds: 1, timeout_seconds: 120 });
  const st = await call('orch.execute.status', { pipeline_execution_id: real.result!.pipeline_execution_id });
  t.like(st.result, { status: 'completed', final_result: { output: 'The program printed 42' } });
});

test.serial('orch.agent.generate deploys only a valid manifest; orch.workflow.generate corrects a refused one', async (t) => {
  const never = await call('orch.agent.generate', { input: 'NEVER_VALID agent' });
  t.regex(never.error ?? '', /^InvalidManifest: the model produced no valid agent manifest in 3 attempts/);
  const names = await node.db.query<{ n: number }>("SELECT count(*)::int AS n FROM agents WHERE name ILIKE 'not_valid'");
  t.is(names.rows[0]?.n, 0);

  const made = await call('orch.agent.generate', { input: 'An agent that writes bash scripts. Requirements: labels must contain pipeline-role: code-writer and language: bash' });
  t.falsy(made.error, made.error);
  t.like(made.result, { tool: 'orch.agent.generate', status: 'deployed', deployed: true, name: 'bash-coder', version: '1.0.0', attempts: 2 });
  const exported = await call('orch.agent.export', { name: 'bash-coder' });
  t.is(exported.result?.agent_id, made.result?.agent_id);

  const wf = await call('orch.workflow.generate', { input: 'A workflow that says hello' });
  t.falsy(wf.error, wf.error);
  t.like(wf.result, { tool: 'orch.workflow.generate', status: 'deployed', name: 'greet-flow', attempts: 2 });
  const refusedTurn = llm.requests.filter((b) => system(b).includes('You write workflow manifests'))[1]!;
  t.regex(all(refusedTurn), /nowhere/);
  const run = await call('orch.workflow.run', { name: 'greet-flow' });
  const done = await call('orch.workflow.wait', { execution_id: run.result!.execution_id, poll_interval_seconds: 1, timeout_seconds: 60 });
  t.is(done.result?.status, 'completed');
});
