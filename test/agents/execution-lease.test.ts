// An execution actor whose lease is taken by another node stops: the loop is aborted at the next renewal, the actor
// leaves the runtime (no live entry left behind), and the row is not touched by the node that lost it. In-process
// node over PostgreSQL, the model answered by the scripted OpenAI-compatible server, which stalls so the execution
// is still running when the lease moves.
import test from 'ava';
import { EXECUTION_KIND } from '../../src/agents/execution/actor.ts';
import { startTestNode } from '../support/in-process-node.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';

const AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: stalled, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: "Answer." }
  execution: { mode: one-shot }
`;

test('an execution whose lease another node took stops its actor and leaves the row to the new owner', async (t) => {
  // Every answer takes a minute: the execution stays in its first LLM call until the lease moves.
  const llm = await startScriptedLlm([{ content: 'late' }], { delayMs: 60_000 });
  t.teardown(() => llm.close());
  const { node, api, token } = await startTestNode(t, { name: 'lease', llmUrl: llm.url });
  const acme = await token('acme');
  const call = async <T>(method: string, url: string, body?: unknown): Promise<T> => {
    const res = await api<T>(method, url, body, acme);
    if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const { agent_id } = await call<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: AGENT });
  const { execution_id: id } = await call<{ execution_id: string }>('POST', '/v1/executions', { agent_id, input: 'q' });
  await llm.waitForRequests(1, 30_000);
  t.true(node.actors.isLive(EXECUTION_KIND, id), 'the actor runs the execution');

  // Another node claims the row (as it would after this one's lease ran out): owner and epoch move on.
  const stolen = await node.db.query<{ epoch: number }>(
    `UPDATE executions SET owner_node = 'thief', epoch = epoch + 1, lease_expires_at = now() + interval '1 hour' WHERE id = $1 RETURNING epoch`,
    [id],
  );
  t.is(stolen.rowCount, 1);

  // The next renewal (every lease/3 = 10 s) finds the lease gone; the actor must leave the runtime.
  const deadline = Date.now() + 60_000;
  while (node.actors.isLive(EXECUTION_KIND, id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  t.false(node.actors.isLive(EXECUTION_KIND, id), 'the actor stopped after losing its lease');
  const row = await node.db.query<{ owner_node: string; epoch: number; status: string }>('SELECT owner_node, epoch, status FROM executions WHERE id = $1', [id]);
  t.is(row.rows[0]?.owner_node, 'thief', 'the lease stays with the node that took it');
  t.is(row.rows[0]?.epoch, stolen.rows[0]?.epoch);
  t.true(['pending', 'running'].includes(row.rows[0]?.status ?? ''), 'the loser wrote no terminal status');
});
