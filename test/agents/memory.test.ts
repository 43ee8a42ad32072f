// Cortex memory in the refinement loop (spec.execution.memory) on an in-process node over PostgreSQL, agents run
// with process isolation and answered by the scripted OpenAI-compatible server. Proves: an execution that fails an
// iteration and then passes stores the solution (error type and signature → the answer that passed); a later
// execution failing the same way gets that solution in its refine prompt, and passing again raises the pattern's
// weight; an agent without memory neither recalls nor stores; a node without Cortex ignores memory.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { startTestNode, type TestNode } from '../support/in-process-node.ts';
import { startScriptedLlm, type ChatRequest, type ScriptedLlm } from '../support/scripted-llm.ts';

const agentYaml = (name: string, memory: boolean): string => `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: ${name}, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: "Answer with a JSON object holding the answer." }
  execution:
    mode: iterative
    max_iterations: 3
    memory: ${memory}
    validation: [ { type: json_schema, schema: { type: object, required: [answer], properties: { answer: { type: integer } } } } ]
`;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
let llm: ScriptedLlm;

/** First attempt of every execution: prose (fails json_schema); after a refine prompt: the JSON. */
function script(body: ChatRequest) {
  const refined = body.messages.some((m) => m.role === 'user' && String(m.content ?? '').startsWith('Iteration '));
  return { content: refined ? '{"answer": 42}' : 'The answer is forty-two.' };
}

interface Node extends TestNode {
  tenant: string;
  tenantToken: string;
}

async function start(cortex: boolean): Promise<Node> {
  const n = await startTestNode((fn) => void cleanups.push(fn), { name: 'mem', llmUrl: llm.url, extraYaml: cortex ? '  cortex: {}\n' : '' });
  const tenant = `mem-${randomUUID().slice(0, 8)}`;
  return { ...n, tenant, tenantToken: await n.token(tenant) };
}

const api = <T>(n: Node, method: string, url: string, body?: unknown): Promise<{ status: number; body: T }> => n.api<T>(method, url, body, n.tenantToken);

/** Runs one execution to its end; answers its view and the LLM requests it made. */
async function run(n: Node, agent: string, input: string): Promise<{ status: string; iteration: number; final_output: string | null; requests: ChatRequest[] }> {
  const started = await api<{ execution_id: string }>(n, 'POST', '/v1/executions', { agent_id: agent, input });
  if (started.status !== 200 && started.status !== 201) throw new Error(`start: ${started.status} ${JSON.stringify(started.body)}`);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const v = await api<{ status: string; iteration: number; final_output: string | null }>(n, 'GET', `/v1/executions/${started.body.execution_id}`);
    if (['completed', 'failed', 'cancelled'].includes(v.body.status)) {
      return { ...v.body, requests: llm.requests.filter((r) => r.messages.some((m) => String(m.content ?? '').includes(input))) };
    }
    if (Date.now() > deadline) throw new Error(`execution did not finish: ${JSON.stringify(v.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function deploy(n: Node, name: string, memory: boolean): Promise<string> {
  const r = await api<{ agent_id: string }>(n, 'POST', '/v1/agents', { manifest_yaml: agentYaml(name, memory) });
  if (r.status !== 201) throw new Error(`deploy ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.agent_id;
}

async function patterns(n: Node): Promise<{ error_type: string; solution_approach: string; frequency: number; success_count: number; tags: string[] }[]> {
  const r = await n.node.db.query<{ error_type: string; solution_approach: string; frequency: string; success_count: string; tags: string[] }>(
    'SELECT error_type, solution_approach, frequency::text AS frequency, success_count::text AS success_count, tags FROM cortex_patterns WHERE tenant_id = $1',
    [n.tenant],
  );
  return r.rows.map((p) => ({ ...p, frequency: Number(p.frequency), success_count: Number(p.success_count) }));
}

const hintsIn = (reqs: ChatRequest[]): boolean => reqs.some((r) => r.messages.some((m) => String(m.content ?? '').includes('Solutions that worked for similar errors before')));

test.before(async () => {
  llm = await startScriptedLlm(script);
  cleanups.push(() => llm.close());
});

test.after.always(async () => {
  for (const fn of cleanups.reverse()) await Promise.resolve().then(fn).catch(() => undefined);
});

test('memory: the solution that worked is stored, recalled in the next refine prompt, and its weight raised', async (t) => {
  const n = await start(true);
  const id = await deploy(n, 'answerer', true);

  const first = await run(n, id, 'question one');
  t.is(first.status, 'completed');
  t.is(first.iteration, 2);
  t.false(hintsIn(first.requests), 'nothing remembered yet');
  let stored = await patterns(n);
  t.is(stored.length, 1);
  t.is(stored[0]?.error_type, 'ValidationFailed');
  t.regex(stored[0]!.solution_approach, /passed validation on iteration 2[\s\S]*\{"answer": 42\}/);
  t.deepEqual(stored[0]?.tags, ['agent:answerer']);
  t.is(stored[0]?.frequency, 1);

  const second = await run(n, id, 'question two');
  t.is(second.status, 'completed');
  t.true(hintsIn(second.requests), 'the refine prompt carries the remembered solution');
  const refine = second.requests.find((r) => r.messages.some((m) => String(m.content ?? '').includes('Solutions that worked')))!;
  const hint = String(refine.messages.find((m) => String(m.content ?? '').includes('Solutions that worked'))?.content);
  t.regex(hint, /Iteration 1 failed validation:\njson_schema: the final answer is not valid JSON/);
  t.regex(hint, /\(ValidationFailed, seen 1×, worked 100% of the time\) Agent "answerer" passed validation on iteration 2/);
  stored = await patterns(n);
  t.is(stored.length, 1, 'the same error and fix deduplicate into one pattern');
  t.is(stored[0]?.frequency, 2, 'its weight was raised');
  t.is(stored[0]?.success_count, 2);
});

test('no memory: an agent without it neither recalls nor stores; a node without Cortex ignores it', async (t) => {
  const n = await start(true);
  const plain = await deploy(n, 'plain', false);
  const r = await run(n, plain, 'question three');
  t.is(r.status, 'completed');
  t.is(r.iteration, 2);
  t.deepEqual(await patterns(n), []);
  t.false(hintsIn(r.requests));

  const off = await start(false);
  const id = await deploy(off, 'answerer', true);
  const r2 = await run(off, id, 'question four');
  t.is(r2.status, 'completed', 'memory: true on a node without Cortex still runs');
  t.false(hintsIn(r2.requests));
  t.deepEqual(await patterns(off), []);
});
