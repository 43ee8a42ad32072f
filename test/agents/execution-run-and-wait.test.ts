// Run-and-wait for executions (issue 16): `POST /v1/executions` with `Prefer: wait=N` answers the execution's end
// (status, final_output, reason) when it ends within N seconds, else `{execution_id}` as without it; a malformed
// preference is ignored (RFC 7240): the plain answer at once, no Preference-Applied. On a real node with a real
// OpenAI-compatible peer (the scripted LLM server) and the process runtime.
import test from 'ava';
import { startTestNode } from '../support/in-process-node.ts';
import { oneShotAgent } from '../support/one-shot-agent.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';

const ONE_SHOT = oneShotAgent('waiter');

test('POST /v1/executions with Prefer: wait answers the end within the wait, else the id; bad Prefer ignored', async (t) => {
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  t.teardown(() => release());
  const llm = await startScriptedLlm(async (body) => {
    const user = String(body.messages.find((m) => m.role === 'user')?.content ?? '');
    if (user.includes('slow')) await held; // answered only when the test lets it
    return { content: 'yes' };
  });
  t.teardown(() => llm.close());
  const n = await startTestNode(t, { name: 'exec-wait', llmUrl: llm.url });
  const token = await n.token();
  const dep = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: ONE_SHOT }, token);
  t.is(dep.status, 201, JSON.stringify(dep.body));
  const agent = dep.body.agent_id;

  const quick = await n.api<{ execution_id: string; status: string; final_output: string | null; reason: string | null }>(
    'POST', '/v1/executions', { agent_id: agent, input: 'quick' }, token, { prefer: 'wait=30' },
  );
  t.is(quick.status, 200, JSON.stringify(quick.body));
  t.like(quick.body, { status: 'completed', final_output: 'yes', reason: null });
  const row = await n.api<{ status: string; final_output: string }>('GET', `/v1/executions/${quick.body.execution_id}`, undefined, token);
  t.like(row.body, { status: 'completed', final_output: 'yes' }, 'the answer is the committed end');

  const res = await fetch(`${n.http}/v1/executions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', prefer: 'respond-async, wait=1' },
    body: JSON.stringify({ agent_id: agent, input: 'slow' }),
  });
  const slow = (await res.json()) as Record<string, unknown>;
  t.is(res.status, 200);
  t.is(res.headers.get('preference-applied'), 'wait=1');
  t.deepEqual(Object.keys(slow), ['execution_id'], 'still running at the wait end: the id, as without a wait');
  release();

  const t0 = Date.now();
  const bad = await fetch(`${n.http}/v1/executions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', prefer: 'wait=forever' },
    body: JSON.stringify({ agent_id: agent, input: 'quick' }),
  });
  t.is(bad.status, 200);
  t.is(bad.headers.get('preference-applied'), null);
  t.deepEqual(Object.keys((await bad.json()) as object), ['execution_id']);
  t.true(Date.now() - t0 < 20_000);

  // Refused before anything is written, wait or not.
  const missing = await n.api<{ error: string }>('POST', '/v1/executions', { agent_id: agent }, token, { prefer: 'wait=5' });
  t.is(missing.status, 400);
  // The route's request schema names the field (src/gateway/http/request-schemas.ts).
  t.regex(missing.body.error, /required property 'input'/);
  const notUuid = await n.api('POST', '/v1/executions', { agent_id: 'x', input: 'y' }, token, { prefer: 'wait=5' });
  t.is(notUuid.status, 400);

  // The slow one ends once its model answers; the earlier waiter had already had its answer.
  const slowId = String(slow.execution_id);
  for (let i = 0; i < 300; i++) {
    const r = await n.api<{ status: string }>('GET', `/v1/executions/${slowId}`, undefined, token);
    if (r.body.status === 'completed') break;
    await new Promise((r2) => setTimeout(r2, 100));
  }
  t.is((await n.api<{ status: string }>('GET', `/v1/executions/${slowId}`, undefined, token)).body.status, 'completed');
});

test('run-and-wait for an execution that fails: the failed status and its reason', async (t) => {
  const n = await startTestNode(t, { name: 'exec-wait-fail' }); // no model provider: fails at its first iteration
  const token = await n.token();
  const dep = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: ONE_SHOT }, token);
  t.is(dep.status, 201, JSON.stringify(dep.body));
  const out = await n.api<{ status: string; reason: string }>('POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'x' }, token, { prefer: 'wait=30' });
  t.is(out.status, 200);
  t.like(out.body, { status: 'failed', reason: 'no LLM provider configured for alias "default"' });
});
