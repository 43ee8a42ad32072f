// ContainerRun and ParallelContainerRun inside the real engine on PostgreSQL, wired the way a node wires them
// (containerRunners): exit-code transitions, the blackboard read by the next state's templates, per-step outputs.
import test from 'ava';
import { containerRunners } from '../../src/workflow/states/container-runners.ts';
import { engineProblem, runtime } from './container-run-support.ts';
import { manifest, startEngine } from './engine-harness.ts';

test.before(async () => {
  const problem = await engineProblem();
  if (problem) throw new Error(problem);
});

const volumes = { hostPath: async (_t: string, id: string): Promise<string> => { throw new Error(`no volume ${id} in this test`); } };

test('a ContainerRun state feeds exit_code conditions and the next state templates', async (t) => {
  const h = await startEngine(t, { runners: containerRunners({ runtime, volumes }) });
  await h.deploy(manifest('ci', 'build', `    build:
      kind: ContainerRun
      image: localhost/orch-runtime:latest
      image_pull_policy: Never
      command: ['sh', '-c', 'echo built-{{input.rev}}; exit 3']
      transitions:
        - { condition: exit_code, value: '3', target: three }
        - { target: other }
    three:
      kind: System
      command: 'update_blackboard {"seen": "{{trim build.output.stdout}}|{{build.output.exit_code}}|{{build.status}}"}'
      transitions: []
    other:
      kind: System
      command: 'update_blackboard {"seen": "other"}'
      transitions: []
`));
  const id = await h.run('ci', { input: { rev: 'abc' } });
  const row = await h.waitFor(id, undefined, 60_000);
  t.is(row.status, 'completed', row.error ?? '');
  t.is(row.blackboard.seen, 'built-abc|3|failed');
  t.like(row.blackboard.build as object, { status: 'failed', exit_code: 3 });
});

test('ParallelContainerRun in the engine: per-step outputs by name, on_success with best_effort', async (t) => {
  const h = await startEngine(t, { runners: containerRunners({ runtime, volumes }) });
  await h.deploy(manifest('fan', 'checks', `    checks:
      kind: ParallelContainerRun
      completion: best_effort
      steps:
        - { name: lint, image: localhost/orch-runtime:latest, image_pull_policy: Never, command: ['echo', 'lint ok'] }
        - { name: unit, image: localhost/orch-runtime:latest, image_pull_policy: Never, command: ['sh', '-c', 'exit 1'] }
      transitions:
        - { condition: on_success, target: report }
    report:
      kind: System
      command: 'update_blackboard {"r": "{{trim checks.output.lint.stdout}}/{{checks.output.unit.exit_code}}"}'
      transitions: []
`));
  const id = await h.run('fan');
  const row = await h.waitFor(id, undefined, 60_000);
  t.is(row.status, 'completed', row.error ?? '');
  t.is(row.blackboard.r, 'lint ok/1');
});
