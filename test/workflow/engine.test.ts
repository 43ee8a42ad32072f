// The workflow engine over real PostgreSQL with System states: update_blackboard/update_context chains, shell
// commands with env and exit-code transitions, feedback, the visit and transition limits, the per-state timeout,
// input_schema (422, nothing written), output_template and its coercion failure, cancel, and the event stream.
import test from 'ava';
import { OrchError } from '../../src/errors/catalog.ts';
import { manifest, startEngine, TENANT } from './engine-harness.ts';

test('update_blackboard chain: each state reads the previous ones; context and caller pairs seed the blackboard', async (t) => {
  const h = await startEngine(t);
  await h.deploy(
    manifest(
      'chain',
      'a',
      `    a:
      kind: System
      command: 'update_blackboard {"x": 1, "greeting": "{{workflow.context.hello}} {{input.who}}"}'
      transitions: [{ target: b }]
    b:
      kind: System
      command: 'update_blackboard {"y": "{{blackboard.x}}-{{seed}}-{{intent}}"}'
      transitions: [{ condition: on_success, target: c }]
    c:
      kind: System
      command: 'update_context {"phase": "done"}'
      transitions: [{ target: d }]
    d:
      kind: System
      command: 'update_blackboard {"phase": "{{workflow.context.phase}}"}'
      transitions: []
`,
      '',
    ).replace('  initial_state: a', '  initial_state: a\n  context: { hello: Hi }'),
  );
  const id = await h.run('chain', { input: { who: 'Bob' }, intent: 'test it', blackboard: { seed: 's1' } });
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  t.is(row.blackboard.greeting, 'Hi Bob');
  t.is(row.blackboard.y, '1-s1-test it');
  t.is(row.blackboard.hello, 'Hi', 'spec.context seeds the blackboard');
  t.is(row.blackboard.intent, 'test it');
  t.is(row.blackboard.phase, 'done');
  t.deepEqual(row.context, { hello: 'Hi', phase: 'done' });
  t.is(row.current_state, 'd');
  t.is(row.total_transitions, 3);
  t.deepEqual((row.blackboard.a as { status: string }).status, 'success');
  const events = await h.events(id);
  t.deepEqual(
    events.map((e) => e.type),
    [
      'WorkflowExecutionStarted',
      'WorkflowStateEntered',
      'WorkflowStateCompleted',
      'WorkflowStateEntered',
      'WorkflowStateCompleted',
      'WorkflowStateEntered',
      'WorkflowStateCompleted',
      'WorkflowStateEntered',
      'WorkflowStateCompleted',
      'WorkflowExecutionCompleted',
    ],
  );
  t.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1));
  const entered = events.filter((e) => e.type === 'WorkflowStateEntered');
  t.deepEqual(entered.map((e) => [e.state_name, e.iteration_number]), [['a', 1], ['b', 1], ['c', 1], ['d', 1]]);
  t.truthy(entered[0]!.payload.entered_at);
  t.is(entered[1]!.payload.from, 'a');
  const completedA = events.find((e) => e.type === 'WorkflowStateCompleted' && e.state_name === 'a')!;
  t.deepEqual(completedA.payload.transition, { to: 'b', condition: 'always', number: 1 });
  t.is(completedA.payload.status, 'success');
  t.truthy(events[0]!.payload.workflow_id);
  t.truthy(events[0]!.payload.started_at);
});

test('shell commands: env and workdir, stdout on the blackboard, exit-code transitions and on_failure', async (t) => {
  const h = await startEngine(t);
  await h.deploy(
    manifest(
      'shell',
      'build',
      `    build:
      kind: System
      command: 'echo "$GREETING from $(pwd)"; exit 3'
      env: { GREETING: 'hello {{input.name}}' }
      workdir: /tmp
      transitions:
        - { condition: exit_code, value: "0", target: ok }
        - { condition: exit_code, value: "3", target: three, feedback: 'build said {{build.output.stdout}}' }
        - { target: ok }
    three:
      kind: System
      command: 'printf "%s" "{{state.feedback}}" >&2; false'
      transitions:
        - { condition: on_success, target: ok }
        - { condition: on_failure, target: recovered }
    recovered:
      kind: System
      command: 'echo {{three.output.exit_code}} {{three.status}}'
      transitions: []
    ok:
      kind: System
      command: 'true'
      transitions: []
`,
    ),
  );
  const id = await h.run('shell', { input: { name: 'ann' } });
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  const build = row.blackboard.build as { status: string; output: { stdout: string; exit_code: number } };
  t.is(build.status, 'failed');
  t.is(build.output.exit_code, 3);
  t.is(build.output.stdout, 'hello ann from /tmp\n');
  const three = row.blackboard.three as { output: { stderr: string; exit_code: number } };
  t.is(three.output.stderr, 'build said hello ann from /tmp\n');
  t.is(three.output.exit_code, 1);
  t.is((row.blackboard.recovered as { output: { stdout: string } }).output.stdout, '1 failed\n');
  t.is(row.current_state, 'recovered');
});

test('max_state_visits terminates the run with a reason naming the state', async (t) => {
  const h = await startEngine(t);
  await h.deploy(
    manifest(
      'loop',
      'spin',
      `    spin:
      kind: System
      max_state_visits: 3
      command: 'update_blackboard {"n": "{{blackboard.n}}x"}'
      transitions: [{ target: spin }]
`,
    ),
  );
  const id = await h.run('loop', { blackboard: { n: '' } });
  const row = await h.waitFor(id);
  t.is(row.status, 'failed');
  t.regex(row.error ?? '', /state "spin" would be entered more than its max_state_visits \(3\) times/);
  t.is(row.blackboard.n, 'xxx');
  t.deepEqual(row.visits, { spin: 3 });
  const events = await h.events(id);
  t.is(events.filter((e) => e.type === 'WorkflowStateEntered').length, 3);
  t.is(events.at(-1)!.type, 'WorkflowExecutionFailed');
});

test('max_total_transitions terminates the run', async (t) => {
  const h = await startEngine(t);
  await h.deploy(
    manifest(
      'pingpong',
      'ping',
      `    ping:
      kind: System
      max_state_visits: 20
      command: 'true'
      transitions: [{ target: pong }]
    pong:
      kind: System
      max_state_visits: 20
      command: 'true'
      transitions: [{ target: ping }]
`,
    ).replace('  initial_state: ping', '  initial_state: ping\n  max_total_transitions: 5'),
  );
  const id = await h.run('pingpong');
  const row = await h.waitFor(id);
  t.is(row.status, 'failed');
  t.regex(row.error ?? '', /max_total_transitions \(5\) exceeded/);
  t.is(row.total_transitions, 5);
});

test('a state timeout aborts the command and fails the state (on_failure path)', async (t) => {
  const h = await startEngine(t);
  await h.deploy(
    manifest(
      'slow',
      'sleepy',
      `    sleepy:
      kind: System
      timeout: 1s
      command: 'sleep 600'
      transitions:
        - { condition: on_success, target: done }
        - { condition: on_failure, target: handled, feedback: 'previous: {{sleepy.error}}' }
    handled:
      kind: System
      command: 'update_blackboard {"why": {{json state.feedback}} }'
      transitions: []
    done:
      kind: System
      command: 'true'
      transitions: []
`,
    ),
  );
  const started = Date.now();
  const id = await h.run('slow');
  const row = await h.waitFor(id);
  // Far under the command's 600 s: the 1 s state timeout aborted it (the margin is for a loaded machine).
  t.true(Date.now() - started < 60_000);
  t.is(row.status, 'completed', row.error ?? '');
  t.is(row.current_state, 'handled');
  t.regex(String(row.blackboard.why), /state "sleepy" timed out after 1 s/);
});

test('no matching transition fails the run; a missing template key renders a placeholder', async (t) => {
  const h = await startEngine(t);
  await h.deploy(
    manifest(
      'nomatch',
      'a',
      `    a:
      kind: System
      command: 'echo "{{nothere.output}}"; exit 1'
      transitions: [{ condition: on_success, target: a }]
`,
    ),
  );
  const id = await h.run('nomatch');
  const row = await h.waitFor(id);
  t.is(row.status, 'failed');
  t.regex(row.error ?? '', /no transition of state "a" matched/);
  t.regex((row.blackboard.a as { output: { stdout: string } }).output.stdout, /nothere/);
});

test('input_schema: a bad input is refused with 422 and nothing is written; output_template becomes final_output', async (t) => {
  const h = await startEngine(t);
  await h.deploy(
    manifest(
      'typed',
      'a',
      `    a:
      kind: System
      command: 'update_blackboard {"count": "{{input.n}}", "ok": "true"}'
      transitions: []
`,
      `  input_schema:
    type: object
    required: [n]
    properties: { n: { type: integer } }
  output_schema:
    type: object
    properties: { count: { type: integer }, ok: { type: boolean }, label: { type: string } }
  output_template:
    count: '{{blackboard.count}}'
    ok: '{{blackboard.ok}}'
    label: 'n={{input.n}}'
`,
    ),
  );
  const err = await t.throwsAsync(() => h.run('typed', { input: { n: 'seven' } }));
  t.true(err instanceof OrchError);
  t.is((err as OrchError).spec.http, 422);
  const count = await h.db.query<{ n: number }>('SELECT count(*)::INT4 AS n FROM workflow_executions');
  t.is(count.rows[0]!.n, 0);
  const id = await h.run('typed', { input: { n: 7 } });
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  t.deepEqual(row.final_output, { count: 7, ok: true, label: 'n=7' });
  const view = await h.cap.runs.get(TENANT, id);
  t.deepEqual(view.final_output, { count: 7, ok: true, label: 'n=7' });
});

test('an output coercion failure fails the run naming the field and the value', async (t) => {
  const h = await startEngine(t);
  await h.deploy(
    manifest(
      'badout',
      'a',
      `    a:
      kind: System
      command: 'update_blackboard {"count": "many"}'
      transitions: []
`,
      `  output_schema:
    type: object
    properties: { count: { type: integer } }
  output_template:
    count: '{{blackboard.count}}'
`,
    ),
  );
  const id = await h.run('badout');
  const row = await h.waitFor(id);
  t.is(row.status, 'failed');
  t.regex(row.error ?? '', /count/);
  t.regex(row.error ?? '', /many/);
  t.is(row.final_output, null);
});

test('cancel stops a running state and records cancelled; remove refuses a running run and deletes a terminal one', async (t) => {
  const h = await startEngine(t);
  await h.deploy(
    manifest(
      'long',
      'a',
      `    a:
      kind: System
      command: 'sleep 60'
      transitions: []
`,
    ),
  );
  const id = await h.run('long');
  await h.waitFor(id, 'running');
  await new Promise((r) => setTimeout(r, 200));
  const removeEarly = await t.throwsAsync(() => h.cap.runs.remove(TENANT, id));
  t.is((removeEarly as OrchError).spec.http, 409);
  t.deepEqual(await h.cap.runs.cancel(TENANT, id), { cancelled: true, status: 'cancelling' });
  const row = await h.waitFor(id, undefined, 10_000);
  t.is(row.status, 'cancelled');
  t.is((await h.cap.runs.cancel(TENANT, id)).cancelled, false);
  t.is((await h.events(id)).at(-1)!.type, 'WorkflowExecutionCancelled');
  await h.cap.runs.remove(TENANT, id);
  const gone = await t.throwsAsync(() => h.cap.runs.get(TENANT, id));
  t.is((gone as OrchError).spec.http, 404);
  t.is((await h.events(id)).length, 0);
});

test('logs are paged (default 50) with sequence, state_name, iteration_number; follow gives history then live', async (t) => {
  const h = await startEngine(t);
  await h.deploy(
    manifest(
      'paged',
      'a',
      `    a:
      kind: System
      max_state_visits: 20
      command: 'update_blackboard {"i": "{{blackboard.i}}."}'
      transitions: [{ target: b }]
    b:
      kind: System
      max_state_visits: 20
      command: 'true'
      transitions:
        - { condition: custom, expression: '{{length blackboard.i}} < 19', target: a }
        - { target: end }
    end:
      kind: System
      command: 'true'
      transitions: []
`,
    ),
  );
  const id = await h.run('paged', { blackboard: { i: '' } });
  const seen: string[] = [];
  const sub = await h.cap.runs.follow(TENANT, id, (e) => seen.push(e.type));
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  const first = await h.cap.runs.logs(TENANT, id);
  t.is(first.limit, 50);
  t.is(first.events.length, 50);
  t.is(first.events[0]!.event_type, 'WorkflowExecutionStarted');
  t.is(first.events[1]!.event_type, 'WorkflowStateEntered');
  t.is(first.events[1]!.state_name, 'a');
  t.is(first.events[1]!.iteration_number, 1);
  t.is(first.events[1]!.sequence, 2);
  t.truthy(first.events[1]!.recorded_at);
  const rest = await h.cap.runs.logs(TENANT, id, 500, 50);
  t.is(rest.limit, 200);
  t.is(rest.events[0]!.sequence, 51);
  t.is(first.total, 50 + rest.events.length);
  // Up to 60 s for the live subscription to catch up: on a loaded machine 1 s was not always enough.
  for (let i = 0; i < 3000 && seen.at(-1) !== 'WorkflowExecutionCompleted'; i++) await new Promise((r) => setTimeout(r, 20));
  await sub.close();
  t.is(seen.length, first.total);
  t.is(seen.at(-1), 'WorkflowExecutionCompleted');
});
