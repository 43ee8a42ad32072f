// Agent and ParallelAgents states on a real `orch up` node over PostgreSQL, with agents answered by the scripted
// OpenAI-compatible server: the Agent state runs an execution (rendered input, workflow_execution_id, id derived
// from the visit) and writes status/output/score (its semantic judge's)/iterations, and score_above routes on it; ParallelAgents runs every judge as its own execution,
// drops a judge whose output is not valid judge JSON, and transitions on the consensus; fewer than
// min_judges_required completed judges fail the state.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { openDb } from '../../src/storage/open.ts';
import { idFromVisit, visitKeyOf } from '../../src/workflow/engine/ids.ts';
import { WorkflowDefinitionService } from '../../src/workflow/registry/service.ts';
import { createTestDatabase } from '../support/pg.ts';
import { eventually, startOrchNode } from '../support/node-process.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';

const agent = (name: string, marker: string, validation = ''): string => `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: ${name}, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: "${marker}" }
  execution: { mode: one-shot${validation} }
  tools: [ fs.read ]
`;

const FLOW = (minJudges: number): string => `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: review-${minJudges}, version: 1.0.0 }
spec:
  initial_state: write
  states:
    write:
      kind: Agent
      agent: writer
      input: 'Write about {{input.topic}}'
      transitions:
        - { condition: score_above, threshold: 0.8, target: judge }
        - { target: failed_end }
    judge:
      kind: ParallelAgents
      agents:
        - { agent: judge-a, input: 'Judge: {{write.output}}' }
        - { agent: judge-b, input: 'Judge: {{write.output}}', weight: 2 }
        - { agent: judge-c, input: 'Judge: {{write.output}}' }
      consensus: { strategy: weighted_average, threshold: 0.7, min_judges_required: ${minJudges} }
      transitions:
        - { condition: consensus, threshold: 0.7, agreement: 0.5, target: passed }
        - { target: rejected }
    passed:
      kind: System
      command: 'update_blackboard {"verdict": "pass {{judge.consensus.score}}"}'
      transitions: []
    rejected:
      kind: System
      command: 'update_blackboard {"verdict": "reject"}'
      transitions: []
    failed_end:
      kind: System
      command: 'true'
      transitions: []
`;

test('Agent then ParallelAgents: executions per visit, judge JSON validated, consensus transition, min_judges_required', async (t) => {
  const llm = await startScriptedLlm((body) => {
    const all = body.messages.map((m) => String(m.content ?? '')).join('\n');
    if (all.includes('MARK_GRADER')) return { content: '{"score": 0.85, "reasoning": "covers the topic well"}' };
    if (all.includes('MARK_WRITER')) return { content: `A short text about ${/Write about (\w+)/.exec(all)?.[1] ?? '?'}` };
    if (all.includes('MARK_JUDGE_A')) return { content: '```json\n{"score": 0.9, "confidence": 0.9, "reasoning": "clear and correct text"}\n```' };
    if (all.includes('MARK_JUDGE_B')) return { content: '{"score": 0.8, "confidence": 0.85, "reasoning": "good enough, minor issues", "verdict": "pass"}' };
    return { content: 'I liked it.' }; // judge C: not judge JSON
  });
  t.teardown(() => llm.close());
  const database = await createTestDatabase({ migrated: true });
  t.teardown(() => database.drop());
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-wf-agents-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const config = path.join(dir, 'node.yaml');
  await writeFile(
    config,
    `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: agents }
spec:
  node: { id: wa-${randomUUID().slice(0, 6)}, role: hybrid }
  runtime: { default_isolation: process }
  llm_providers: [ { name: s, type: openai, endpoint: "${llm.url}", api_key: k, models: [ { alias: default, model: m } ] } ]
`,
  );
  const node = await startOrchNode({ ORCH_CONFIG: config, ORCH_DATA_DIR: path.join(dir, 'data'), DATABASE_URL: database.url, REDIS_URL: undefined });
  t.teardown(() => node.child.kill('SIGKILL'));
  const headers = { authorization: `Bearer ${node.banner.dev_token ?? ''}`, 'content-type': 'application/json' };
  const post = async <T>(url: string, body: unknown): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${node.banner.http}${url}`, { method: 'POST', headers, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as T };
  };
  for (const [name, marker, validation] of [
    ['grader', 'MARK_GRADER', ''],
    ['writer', 'MARK_WRITER', ', validation: [ { type: semantic, judge_agent: grader, min_score: 0.5 } ]'],
    ['judge-a', 'MARK_JUDGE_A', ''],
    ['judge-b', 'MARK_JUDGE_B', ''],
    ['judge-c', 'MARK_JUDGE_C', ''],
  ] as const) {
    const dep = await post('/v1/agents', { manifest_yaml: agent(name, marker, validation) });
    t.is(dep.status, 201, JSON.stringify(dep.body));
  }
  const who = (await (await fetch(`${node.banner.http}/v1/whoami`, { headers })).json()) as { tenant_id?: string; subject?: string };
  const db = await openDb({ url: database.url, dataDir: dir }, silentLogger());
  t.teardown(() => db.close());
  const defs = new WorkflowDefinitionService(db, silentLogger());
  for (const n of [2, 3]) await defs.deploy({ tenant: who.tenant_id ?? 'orch-system', subject: who.subject ?? 'dev', yaml: FLOW(n) });

  const finish = async (id: string): Promise<{ status: string; error: string | null; blackboard: Record<string, any> }> =>
    eventually(async () => {
      const r = (await db.query<{ status: string; error: string | null; blackboard: Record<string, any> }>('SELECT status, error, blackboard FROM workflow_executions WHERE id = $1', [id])).rows[0];
      return r && ['completed', 'failed'].includes(r.status) ? r : undefined;
    }, 90_000, 'the run to finish');

  const run = await post<{ execution_id: string }>('/v1/workflows/review-2/run', { input: { topic: 'cats' } });
  t.is(run.status, 201);
  const row = await finish(run.body.execution_id);
  t.is(row.status, 'completed', row.error ?? '');
  const write = row.blackboard.write;
  t.like(write, { status: 'success', output: 'A short text about cats', score: 0.85, iterations: 1 }, 'the score is the semantic judge\'s');
  t.is(write.execution_id, idFromVisit(visitKeyOf(run.body.execution_id, 'write', 1)), 'the execution id derives from the visit');
  const judge = row.blackboard.judge;
  t.is(judge.status, 'success');
  t.is(judge.individual_results.length, 2, 'judge C gave no judge JSON and does not count');
  t.deepEqual(judge.individual_results.map((r: { agent_id: string }) => r.agent_id), ['judge-a', 'judge-b']);
  t.is(judge.agents.length, 3);
  t.regex(judge.agents[2].error, /invalid judge output|JSON/i);
  t.is(judge.consensus.strategy, 'weighted_average');
  t.true(Math.abs(judge.consensus.score - (0.9 + 2 * 0.8) / 3) < 1e-9, String(judge.consensus.score));
  t.regex(row.blackboard.verdict, /^pass 0\.83/);
  const execs = await db.query<{ id: string; workflow_execution_id: string; input: string }>('SELECT id, workflow_execution_id, input FROM executions ORDER BY created_at');
  t.is(execs.rows.length, 4);
  t.true(execs.rows.every((e) => e.workflow_execution_id === run.body.execution_id));
  t.true(execs.rows.some((e) => e.input === 'Judge: A short text about cats'));

  const strict = await post<{ execution_id: string }>('/v1/workflows/review-3/run', { input: { topic: 'dogs' } });
  const failed = await finish(strict.body.execution_id);
  t.is(failed.status, 'completed', failed.error ?? '');
  t.like(failed.blackboard.judge, { status: 'failed' });
  t.is(failed.blackboard.verdict, 'reject', 'a failed ParallelAgents state has no consensus; the fallback is taken');
  t.regex(String(failed.blackboard.judge.error), /3|min_judges_required/);
});
