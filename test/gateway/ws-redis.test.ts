// The live feed across controllers: two nodes on one PostgreSQL database and one Redis. An execution runs on one of
// them; clients of both nodes see its whole event stream exactly and its row reach its end in the list stream, and a
// workflow started on one and approved through the other shows up in both nodes' workflow and approval lists.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { createTestDatabase } from '../support/pg.ts';
import { redisUrl } from '../support/redis.ts';
import { eventually } from '../support/node-process.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';
import { FeedClient, humanWorkflow, refiningAgent, seqsOf, startTestNode, TERMINAL_EXECUTION, type Defer } from './ws-support.ts';
import { readExecutionEvents } from '../../src/agents/execution/events.ts';
import { WorkflowDefinitionService } from '../../src/workflow/registry/service.ts';
import { silentLogger } from '../../src/logging/logger.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
const defer: Defer = (fn) => void cleanups.push(fn);
test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

type Row = { execution_id: string; status: string };

test('two nodes on one database and Redis: each node’s feed carries what the other runs', async (t) => {
  const db = await createTestDatabase({ migrated: true });
  defer(() => db.drop());
  const llm = await startScriptedLlm(() => ({ content: 'not json' }), { delayMs: 80 });
  defer(() => llm.close());
  const a = await startTestNode(defer, { databaseUrl: db.url, redisUrl: redisUrl(), llmUrl: llm.url });
  const b = await startTestNode(defer, { databaseUrl: db.url, redisUrl: redisUrl(), llmUrl: llm.url });
  t.is(a.node.bus.kind, 'redis');
  const tenant = `t-x-${randomUUID().slice(0, 6)}`;
  const token = await a.token(tenant);

  const clients = [new FeedClient(a.ws, { token }), new FeedClient(b.ws, { token: await b.token(tenant) })];
  await Promise.all(clients.map((c) => c.opened));
  for (const c of clients) for (const s of ['executions', 'workflows', 'approvals', 'nodes']) c.send({ subscribe: s });
  await Promise.all(clients.map((c) => c.until((cl) => ['executions', 'workflows', 'approvals', 'nodes'].every((s) => cl.of(s).some((m) => 'snapshot' in m)))));

  // Executions started through node A; each runs on whichever node claims it.
  const dep = await a.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: refiningAgent('crosser', 3) }, token);
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await a.api<{ execution_id: string }>('POST', '/v1/executions', { agent_id: dep.body.agent_id, input: `go ${i}` }, token)).body.execution_id);
  for (const c of clients) for (const id of ids) c.send({ subscribe: `execution:${id}` });
  for (const [i, c] of clients.entries()) {
    for (const id of ids) {
      await c.until((cl) => cl.of(`execution:${id}`).some(TERMINAL_EXECUTION), 60_000, `node ${i} terminal ${id}`);
      const stored = (await readExecutionEvents(a.node.db, id)).map((e) => e.seq);
      t.deepEqual(seqsOf(c.messages, `execution:${id}`), stored, `node ${i}, execution ${id}: every event once, in order`);
    }
    // The list stream: every execution's row reaches its terminal status on both nodes.
    await c.until((cl) => {
      const last = new Map<string, string>();
      for (const m of cl.of('executions')) {
        const u = m.upsert as Row | undefined;
        if (u) last.set(u.execution_id, u.status);
      }
      return ids.every((id) => last.get(id) === 'failed') ? true : undefined;
    }, 20_000, `node ${i} list`);
  }
  // Both nodes show both members.
  for (const c of clients) {
    const seen = new Set<string>();
    for (const m of c.of('nodes')) {
      for (const r of (m.snapshot as { node_id: string }[] | undefined) ?? []) seen.add(r.node_id);
      const u = m.upsert as { node_id: string } | undefined;
      if (u) seen.add(u.node_id);
    }
    t.true(seen.has(a.node.config.node.id) && seen.has(b.node.config.node.id), [...seen].join(','));
  }

  // A workflow started on A waits for a human; the approval is given through B; both lists follow.
  await new WorkflowDefinitionService(a.node.db, silentLogger()).deploy({ tenant, subject: 'dev', yaml: humanWorkflow('gate') });
  const run = await a.api<{ execution_id: string }>('POST', '/v1/workflows/gate/run', { input: {} }, token);
  t.is(run.status, 201, JSON.stringify(run.body));
  const wf = run.body.execution_id;
  const approvalOn = async (c: FeedClient): Promise<string> =>
    c.until((cl) => cl.of('approvals').map((m) => m.upsert as { id: string; execution_id: string } | undefined).find((u) => u?.execution_id === wf)?.id, 20_000, 'approval');
  const [approvalA, approvalB] = await Promise.all(clients.map(approvalOn));
  t.is(approvalA, approvalB);
  const approved = await b.api('POST', `/v1/human-approvals/${approvalB}/approve`, {}, await b.token(tenant));
  t.is(approved.status, 200);
  for (const c of clients) {
    await c.until((cl) => cl.of('approvals').some((m) => m.remove === approvalA), 20_000, 'approval removed');
    await c.until((cl) => cl.of('workflows').some((m) => { const u = m.upsert as { execution_id: string; status: string; current_state: string } | undefined; return u?.execution_id === wf && u.status === 'completed' && u.current_state === 'ship'; }), 20_000, 'workflow completed');
  }
  await eventually(async () => ((await b.api<{ status: string }>('GET', `/v1/workflows/executions/${wf}`, undefined, await b.token(tenant))).body.status === 'completed' ? true : undefined), 60_000, 'completed');
  for (const c of clients) c.kill();
});
