// The same engine on PGlite (the zero-install default of a node): the group-commit statement, the one-statement
// insert, a Human state's transaction path and the terminal write all run on it.
import test from 'ava';
import { manifest, startEngine, TENANT } from './engine-harness.ts';

test('System chain and a Human approval on PGlite', async (t) => {
  const h = await startEngine(t, { pglite: true });
  await h.deploy(
    manifest(
      'lite',
      'a',
      `    a:
      kind: System
      command: 'update_blackboard {"x": "{{input.x}}"}'
      transitions: [{ target: ask }]
    ask:
      kind: Human
      prompt: 'x is {{x}}?'
      transitions:
        - { condition: input_equals_yes, target: b }
        - { target: a }
    b:
      kind: System
      command: 'echo {{x}}-{{human.feedback}}'
      transitions: []
`,
    ),
  );
  const id = await h.run('lite', { input: { x: 'q' } });
  await h.waitFor(id, 'waiting_for_human_input');
  const [req] = (await h.cap.approvals.list(TENANT)).pending_requests;
  t.is(req?.prompt, 'x is q?');
  await h.cap.approvals.approve(TENANT, req!.id, { feedback: 'ok' });
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  t.is((row.blackboard.b as { output: { stdout: string } }).output.stdout, 'q-ok\n');
  t.deepEqual((await h.events(id)).map((e) => e.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
});
