// Resuming a lost worker's execution on the survivor (issue 7, acceptance: "its execution resumes on the survivor from
// its journal"). Real processes on loopback: one `orch up --role controller` and two `--role worker` nodes on one
// PostgreSQL database, no Redis; a scripted OpenAI-compatible server started here is the model. The agent refines:
// iteration 1 answers prose (fails its json_schema), iteration 2 is held by the model while the worker running it is
// SIGKILLed. The controller notices (the broken stream), takes the row back (a new epoch: the dead worker is fenced)
// and hands it to the survivor, whose ExecutionActor replays iteration 1 from the journal (the model is not asked
// again) and asks only iteration 2 again. A client streaming from the controller sees one ordered stream: no event
// twice, the sequence continuing across the hand-over, the loss and the resume shown in it.
// The second test freezes the worker instead (SIGSTOP: no broken stream, only missed heartbeats): the loss sweep
// resumes the execution on the survivor, and when the frozen worker is thawed and its model call answers, the
// lost worker is fenced: nothing it does reaches the row, the journal or the stream.
import test, { type ExecutionContext } from 'ava';
import type { Db } from '../../src/storage/db.ts';
import { eventually, type NodeProcess } from '../support/node-process.ts';
import { startScriptedLlm } from '../support/scripted-llm.ts';
import { allActive, conversation as text, executionEnd, llmProviders, nodeStarter, nodeStatus, scratch } from './processes.ts';
import { api, readSse, type Api } from './support.ts';

const REFINING = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: refining, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer as JSON. }
  execution:
    mode: iterative
    max_iterations: 3
    llm_timeout_seconds: 300
    iteration_timeout: 300
    validation: [ { type: json_schema, schema: { type: object, required: [answer] } } ]
  security: { resources: { timeout: 600 } }
`;

const QUICK = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: quick, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer in one word. }
  execution: { mode: one-shot, max_iterations: 1, llm_timeout_seconds: 120, iteration_timeout: 120, validation: [] }
  security: { resources: { timeout: 300 } }
`;

interface TwoWorkers {
  db: Db;
  ctl: NodeProcess;
  C: Api;
  ids: string[];
  workers: Record<string, NodeProcess>;
  statusOf(id: string): Promise<string | undefined>;
}

/** A controller and two workers (1 s heartbeats, 3 missed) on a scratch database, the workers ACTIVE. */
async function twoWorkers(t: ExecutionContext, prefix: string, llmUrl: string): Promise<TwoWorkers> {
  const s = await scratch(t, prefix);
  const start = nodeStarter(t, s);
  const sfx = Math.random().toString(36).slice(2, 7);
  const ctlId = `ctl-${sfx}`;
  const ctl = await start(ctlId, `  node: { id: ${ctlId}, role: controller }\n  cluster: { heartbeat_interval_seconds: 1, missed_heartbeats: 3 }\n`);
  const C: Api = { http: ctl.banner.http, token: ctl.banner.dev_token ?? '' };
  const ids = [`wa-${sfx}`, `wb-${sfx}`];
  const workerBody = (id: string): string =>
    `  node: { id: ${id}, role: worker }\n  cluster: { controller: "${ctl.banner.cluster}", heartbeat_interval_seconds: 1, missed_heartbeats: 3 }\n` +
    `${llmProviders(llmUrl)}  runtime: { default_isolation: process }\n`;
  const workers = Object.fromEntries(await Promise.all(ids.map(async (id) => [id, await start(id, workerBody(id))] as const))) as Record<string, NodeProcess>;
  await allActive(C, ids, 60_000, 'two ACTIVE workers');
  return { db: s.db, ctl, C, ids, workers, statusOf: (id) => nodeStatus(C, id) };
}

test.serial('SIGKILL of the worker mid-iteration: the execution resumes on the survivor from its journal, one ordered stream', async (t) => {
  t.timeout(300_000);
  const asked = { it1: 0, it2: 0, quick: 0 };
  let releaseHeld: (() => void) | undefined;
  const llm = await startScriptedLlm(async (body) => {
    const conv = text(body);
    if (conv.includes('Answer in one word')) {
      asked.quick++;
      return { content: 'done' };
    }
    if (!conv.includes('Iteration 1 failed validation')) {
      asked.it1++;
      return { content: 'prose, not JSON' };
    }
    asked.it2++;
    // The first ask of iteration 2 is held: its worker is killed while it waits.
    if (asked.it2 === 1) await new Promise<void>((r) => (releaseHeld = r));
    return { content: '{"answer": 2}' };
  });
  t.teardown(() => {
    releaseHeld?.();
    return llm.close();
  });
  const { db, ctl, C, ids, workers, statusOf } = await twoWorkers(t, 'orch-resume-', llm.url);

  const deploy = async (yaml: string): Promise<string> => {
    const r = await api<{ agent_id: string }>(C, 'POST', '/v1/agents', { manifest_yaml: yaml });
    t.is(r.status, 201, JSON.stringify(r.body));
    return r.body.agent_id;
  };
  const refining = await deploy(REFINING);
  const quick = await deploy(QUICK);
  const row = async (id: string) =>
    (await db.query<{ owner_node: string | null; epoch: number; status: string }>('SELECT owner_node, epoch, status FROM executions WHERE id = $1', [id])).rows[0]!;

  const ex = await api<{ execution_id: string }>(C, 'POST', '/v1/executions', { agent_id: refining, input: 'resume me' });
  t.is(ex.status, 200, JSON.stringify(ex.body));
  const id = ex.body.execution_id;
  // A client of the controller streams the execution live from before the loss to its end.
  const streamed = readSse(`${C.http}/v1/executions/${id}/stream`, C.token, 240_000);
  streamed.catch(() => undefined);
  await eventually(async () => (asked.it2 === 1 ? true : undefined), 60_000, 'iteration 2 to ask the model');
  const before = await row(id);
  const victim = before.owner_node!;
  t.true(ids.includes(victim), `running on a worker: ${victim}`);
  const survivor = ids.find((w) => w !== victim)!;
  t.is(before.status, 'running');

  const killedAt = Date.now();
  t.is(await workers[victim]!.kill('SIGKILL'), 'SIGKILL');
  const done = await executionEnd(C, id, 120_000, 'the execution to finish');
  t.is(done.status, 'completed', done.reason ?? '');
  t.is(done.final_output, '{"answer": 2}');
  const after = await row(id);
  t.is(after.owner_node, survivor, 'finished on the survivor');
  t.true(after.epoch >= before.epoch + 2, `taken back and handed over, each a new epoch: ${before.epoch} → ${after.epoch}`);
  t.is(asked.it1, 1, 'iteration 1 was replayed from the journal, the model was not asked again');
  t.is(asked.it2, 2, 'iteration 2, interrupted, was asked again on the survivor');

  // What a client of the controller saw: every event once, in order, the resume shown between the two halves.
  const events = await streamed;
  t.deepEqual(events.map((e) => e.id), events.map((_, i) => i + 1), 'SSE: the sequence continues across the hand-over, nothing twice');
  const outputOf = (e: { data: unknown }): string => ((e.data as { iteration_output?: { output?: string } }).iteration_output?.output ?? '');
  t.deepEqual(
    events.map((e) => (e.event === 'iteration_output' && outputOf(e).startsWith('[orch]') ? `resume:${outputOf(e).split(' ')[1]}` : e.event)),
    [
      'execution_started',
      'iteration_started',
      'iteration_output',
      'iteration_failed',
      'refinement_applied',
      'iteration_started',
      'resume:worker',
      'resume:resumed',
      'iteration_output',
      'iteration_completed',
      'execution_completed',
    ],
    JSON.stringify(events.map((e) => [e.event, outputOf(e)])),
  );
  const resumeEvents = events.filter((e) => outputOf(e).startsWith('[orch]'));
  t.regex(outputOf(resumeEvents[0]!), new RegExp(`worker ${victim} was lost during iteration 2; resuming from the journal \\(1 iteration\\(s\\) ended, \\d+ step\\(s\\) journaled\\)`));
  t.regex(outputOf(resumeEvents[1]!), new RegExp(`resumed on worker ${survivor}`));
  t.like(resumeEvents[0]!.data, { iteration_output: { iteration_number: 2, resume: { lost_worker: victim, iteration: 2, completed_iterations: 1, attempt: 1 } } });
  const started = events.filter((e) => e.event === 'iteration_started').map((e) => (e.data as { iteration_started: { iteration_number: number } }).iteration_started.iteration_number);
  t.deepEqual(started, [1, 2], 'each iteration announced once');

  // The times the controller recorded: loss noticed, and the work handed to the survivor.
  const recorded = await db.query<{ key: string; at: Date }>(
    `SELECT event_key AS key, recorded_at AS at FROM execution_events WHERE execution_id = $1 AND (event_key LIKE 'lost:%' OR event_key LIKE 'resumed:%') ORDER BY seq`,
    [id],
  );
  const lostAt = recorded.rows[0]!.at.getTime();
  const resumedAt = recorded.rows[1]!.at.getTime();
  t.log(`SIGKILL → loss recorded ${lostAt - killedAt} ms, → handed to the survivor ${resumedAt - killedAt} ms`);
  t.true(lostAt - killedAt < 5000, `loss recorded ${lostAt - killedAt} ms after SIGKILL`);
  t.true(resumedAt - killedAt < 10_000, `resumed ${resumedAt - killedAt} ms after SIGKILL`);

  // Later executions go to the survivor.
  await eventually(async () => ((await statusOf(victim)) === 'UNHEALTHY' ? true : undefined), 30_000, 'the killed worker to be UNHEALTHY');
  for (let i = 0; i < 2; i++) {
    const r = await api<{ execution_id: string }>(C, 'POST', '/v1/executions', { agent_id: quick, input: `later ${i}` });
    const d = await eventually(async () => {
      const x = await api<{ status: string }>(C, 'GET', `/v1/executions/${r.body.execution_id}`);
      return x.body.status === 'completed' || x.body.status === 'failed' ? x.body : undefined;
    }, 60_000, 'a later execution to finish');
    t.is(d.status, 'completed');
    t.is((await row(r.body.execution_id)).owner_node, survivor, 'later executions go to the survivor');
  }
  const running = await db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM executions WHERE status IN ('pending', 'running')`);
  t.is(running.rows[0]!.n, 0, 'nothing stays running');
  const terminals = await db.query<{ n: number }>(`SELECT count(*)::INT4 AS n FROM execution_events WHERE execution_id = $1 AND type IN ('execution_completed', 'execution_failed')`, [id]);
  t.is(terminals.rows[0]!.n, 1, 'one terminal event');
  t.is(await ctl.kill('SIGTERM'), 0, ctl.stderr().slice(-3000));
});

test.serial('a frozen worker: missed heartbeats resume the execution on the survivor; thawed, the lost worker is fenced', async (t) => {
  t.timeout(300_000);
  const asked = { it1: 0, it2: 0 };
  let releaseHeld: (() => void) | undefined;
  let heldAnswered = false;
  const llm = await startScriptedLlm(async (body) => {
    const conv = text(body);
    if (!conv.includes('Iteration 1 failed validation')) {
      asked.it1++;
      return { content: 'prose, not JSON' };
    }
    asked.it2++;
    if (asked.it2 === 1) {
      await new Promise<void>((r) => (releaseHeld = r));
      heldAnswered = true;
      return { content: '{"answer": "late, from the lost worker"}' };
    }
    return { content: '{"answer": 2}' };
  });
  t.teardown(() => {
    releaseHeld?.();
    return llm.close();
  });
  const { db, C, ids, workers, statusOf } = await twoWorkers(t, 'orch-resume-hang-', llm.url);
  const dep = await api<{ agent_id: string }>(C, 'POST', '/v1/agents', { manifest_yaml: REFINING });
  t.is(dep.status, 201, JSON.stringify(dep.body));
  const ex = await api<{ execution_id: string }>(C, 'POST', '/v1/executions', { agent_id: dep.body.agent_id, input: 'freeze me' });
  const id = ex.body.execution_id;
  // A client of the controller streams it live: the controller must keep relaying once the survivor has it.
  const streamed = readSse(`${C.http}/v1/executions/${id}/stream`, C.token, 240_000);
  streamed.catch(() => undefined);
  await eventually(async () => (asked.it2 === 1 ? true : undefined), 60_000, 'iteration 2 to ask the model');
  const victim = (await db.query<{ owner_node: string }>('SELECT owner_node FROM executions WHERE id = $1', [id])).rows[0]!.owner_node;
  const survivor = ids.find((w) => w !== victim)!;

  t.true(workers[victim]!.child.kill('SIGSTOP'));
  const frozenAt = Date.now();
  const done = await executionEnd(C, id, 120_000, 'the execution to finish');
  t.is(done.status, 'completed', done.reason ?? '');
  t.is(done.final_output, '{"answer": 2}');
  t.is(asked.it1, 1, 'iteration 1 replayed from the journal');
  const events = await streamed;
  t.deepEqual(events.map((e) => e.id), events.map((_, i) => i + 1), 'SSE: every event once, in sequence');
  t.is(events.at(-1)?.event, 'execution_completed');
  t.true(events.some((e) => JSON.stringify(e.data).includes(`resumed on worker ${survivor}`)), 'the resume is in the stream');
  const lostAt = (await db.query<{ at: Date }>(`SELECT recorded_at AS at FROM execution_events WHERE execution_id = $1 AND event_key LIKE 'lost:%'`, [id])).rows[0]!.at.getTime();
  t.log(`frozen worker: loss recorded ${lostAt - frozenAt} ms after SIGSTOP (heartbeat 1 s, 3 missed)`);
  t.is(await statusOf(victim), 'UNHEALTHY', 'found by its missed heartbeats');
  const row = (await db.query<{ owner_node: string; epoch: number }>('SELECT owner_node, epoch FROM executions WHERE id = $1', [id])).rows[0]!;
  t.is(row.owner_node, survivor);
  const eventsBefore = await db.query<{ seq: number }>('SELECT seq FROM execution_events WHERE execution_id = $1 ORDER BY seq', [id]);

  // Thaw the lost worker and let its model call answer: whatever it tries to write is fenced off.
  t.true(workers[victim]!.child.kill('SIGCONT'));
  releaseHeld?.();
  await eventually(
    async () => (/lost the execution lease|execution handed over/.test(workers[victim]!.stderr()) ? true : undefined),
    60_000,
    'the thawed worker to find its claim gone',
  );
  await eventually(async () => ((await statusOf(victim)) === 'ACTIVE' ? true : undefined), 60_000, 'the thawed worker to rejoin ACTIVE');
  const final = (await db.query<{ status: string; final_output: string; owner_node: string; epoch: number }>('SELECT status, final_output, owner_node, epoch FROM executions WHERE id = $1', [id])).rows[0]!;
  t.deepEqual(final, { status: 'completed', final_output: '{"answer": 2}', owner_node: row.owner_node, epoch: row.epoch }, 'the row is untouched');
  const eventsAfter = await db.query<{ seq: number }>('SELECT seq FROM execution_events WHERE execution_id = $1 ORDER BY seq', [id]);
  t.deepEqual(eventsAfter.rows, eventsBefore.rows, 'no event from the lost worker');
  const journal = await db.query<{ result: { content?: string } }>(`SELECT result FROM execution_journal WHERE execution_id = $1 AND step_key = 'it2:llm1'`, [id]);
  t.is(journal.rows.length, 1);
  t.is(journal.rows[0]!.result.content, '{"answer": 2}', "the journal holds the survivor's answer, not the late one");
  t.log(`late answer delivered to the lost worker: ${heldAnswered}`);
});
