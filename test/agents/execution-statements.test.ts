// What an execution sends to the database (issue 24: node CPU per execution at density is mostly round trips). A real
// node on PostgreSQL through a TCP relay that keeps every byte the node sends (test/support/pg-wire.ts), a real
// OpenAI-compatible peer (the scripted LLM server) and the process runtime: two one-shot executions, then the
// statements a fresh execution no longer needs are looked for on the wire — the journal read of an execution that
// had not started (it can have no steps), the read of its workflow run when it ends (the actor has its row), and the
// revocation of volume grants by an execution that mounted no volume (only attach() grants one).
import test from 'ava';
import { startTestNode } from '../support/in-process-node.ts';
import { createTestDatabase } from '../support/pg.ts';
import { pgWire } from '../support/pg-wire.ts';
import { oneShotAgent } from '../support/one-shot-agent.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';

const ONE_SHOT = oneShotAgent('counted');

test('a fresh execution reads no journal and, ending, does not read its workflow run back', async (t) => {
  const llm = await startScriptedLlm(async () => ({ content: 'yes' }));
  t.teardown(() => llm.close());
  const database = await createTestDatabase({ migrated: true });
  const wire = await pgWire(database.url);
  // Registered first, so run last: after the node has stopped.
  t.teardown(async () => {
    await wire.close();
    await database.drop();
  });
  const n = await startTestNode(t, { name: 'exec-stmts', llmUrl: llm.url, databaseUrl: wire.url });
  const token = await n.token();
  const dep = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: ONE_SHOT }, token);
  t.is(dep.status, 201, JSON.stringify(dep.body));
  wire.reset();
  // One after the other: when the second has ended, the first's end (and whatever the node does after it) is past.
  for (const input of ['one', 'two']) {
    const run = await n.api<{ status: string; final_output: string }>('POST', '/v1/executions', { agent_id: dep.body.agent_id, input }, token, { prefer: 'wait=60' });
    t.like(run.body, { status: 'completed', final_output: 'yes' }, JSON.stringify(run.body));
  }
  // Not vacuous: both executions' writes went through this relay.
  t.is(wire.count('INSERT INTO executions ('), 2);
  t.true(wire.count('INSERT INTO execution_events') >= 4);
  t.is(wire.count('FROM execution_journal WHERE execution_id'), 0, 'the journal of an execution claimed pending is not read');
  t.is(wire.count('workflow_execution_id::TEXT AS wf FROM executions'), 0, 'its workflow run is not read back at its end');
  t.is(wire.count('DELETE FROM volume_grants'), 0, 'an execution whose manifest mounts no volume has no grant to revoke');
});
