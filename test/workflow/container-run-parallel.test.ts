// ParallelContainerRun over real containers: steps start together, the state ends after all of them, the
// completion strategies, per-step outputs keyed by step name, abort.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ParallelContainerRunState } from '../../src/workflow/manifest/types.ts';
import { parallelContainerRunRunner } from '../../src/workflow/states/parallel-container-run.ts';
import { ctx, deps, engineProblem, leftovers, step, tmpDir, waitRunning } from './container-run-support.ts';

type StepOut = { status: string; exit_code: number | null; stdout: string; stderr: string; duration_ms: number };
type Out = { status: string; output: Record<string, StepOut> };

test.before(async () => {
  const problem = await engineProblem();
  if (problem) throw new Error(problem);
});

// How long each step runs: long enough that the steps overlap even when podman, loaded by the whole suite, takes
// seconds to start the next container.
const STEP_MS = 6000;

function pstate(completion: ParallelContainerRunState['completion'], failing: boolean): ParallelContainerRunState {
  const ws = [{ name: 'workspace', mount_path: '/workspace', read_only: false }];
  // Each step records when it started, waits, and records when it ended: overlapping intervals prove concurrency.
  const cmd = (name: string, code: number) => ['node', '-e',
    `const fs=require('fs');fs.appendFileSync('/workspace/${name}', Date.now()+'\\n');` +
    `setTimeout(()=>{fs.appendFileSync('/workspace/${name}', Date.now()+'\\n');console.log('{{input.tag}}-${name}');process.exit(${code})}, ${STEP_MS})`];
  return {
    kind: 'ParallelContainerRun', max_state_visits: 5, timeout_seconds: 300, volumes: [], transitions: [], completion,
    steps: [
      { name: 'lint', ...step({ command: cmd('lint', 0), volumes: ws }) },
      { name: 'unit', ...step({ command: cmd('unit', failing ? 2 : 0), volumes: ws }) },
      { name: 'types', ...step({ command: cmd('types', 0), volumes: ws }) },
    ],
  };
}

async function interval(dir: string, name: string): Promise<[number, number]> {
  const [a, b] = (await readFile(path.join(dir, name), 'utf8')).trim().split('\n').map(Number);
  return [a ?? NaN, b ?? NaN];
}

test('all_succeed: steps run concurrently; one failure fails the state; outputs keyed by step name', async (t) => {
  const dir = await tmpDir();
  const c = ctx({ storage: { workspace: 'ws', shared: {} }, scope: { input: { tag: 'ci' } } });
  const r = await parallelContainerRunRunner(deps({ ws: dir }))(pstate('all_succeed', true), c);
  const o = r.output as Out;
  t.is(r.outcome.status, 'failed');
  t.is(r.outcome.kind, 'ParallelContainerRun');
  t.regex(r.error ?? '', /failed steps unit/);
  t.deepEqual(Object.keys(o.output).sort(), ['lint', 'types', 'unit']);
  t.is(o.output.lint?.exit_code, 0);
  t.is(o.output.lint?.stdout, 'ci-lint\n');
  t.is(o.output.lint?.status, 'success');
  t.is(o.output.unit?.exit_code, 2);
  t.is(o.output.unit?.status, 'failed');
  t.true((o.output.types?.duration_ms ?? 0) >= STEP_MS);
  // The steps ran side by side: run one after another, no two would overlap. (Requiring every start before the first
  // end failed under CI load, when podman took over 2 s to start the third container.)
  const iv = await Promise.all(['lint', 'unit', 'types'].map((n) => interval(dir, n)));
  const overlapping = iv.some(([s1, e1], i) => iv.some(([s2, e2], j) => i !== j && s2 < e1 && s1 < e2));
  t.true(overlapping, `starts ${iv.map((i) => i[0]).join(',')} ends ${iv.map((i) => i[1]).join(',')}`);
  t.deepEqual(await leftovers(c.visitKey), []);
});

test('all_succeed: every step exits 0 → success', async (t) => {
  const dir = await tmpDir();
  const r = await parallelContainerRunRunner(deps({ ws: dir }))(pstate('all_succeed', false), ctx({ storage: { workspace: 'ws', shared: {} } }));
  t.is(r.outcome.status, 'success');
  t.is((r.output as Out).status, 'success');
});

test('any_succeed: one step exiting 0 is enough; none → failed', async (t) => {
  const dir = await tmpDir();
  const r = await parallelContainerRunRunner(deps({ ws: dir }))(pstate('any_succeed', true), ctx({ storage: { workspace: 'ws', shared: {} } }));
  t.is(r.outcome.status, 'success');
  const none: ParallelContainerRunState = {
    kind: 'ParallelContainerRun', max_state_visits: 5, timeout_seconds: 300, volumes: [], transitions: [], completion: 'any_succeed',
    steps: [{ name: 'a', ...step({ command: ['sh', '-c', 'exit 1'] }) }, { name: 'b', ...step({ command: ['sh', '-c', 'exit 5'] }) }],
  };
  const r2 = await parallelContainerRunRunner(deps())(none, ctx());
  t.is(r2.outcome.status, 'failed');
  t.is((r2.output as Out).output.b?.exit_code, 5);
});

test('best_effort: success even when steps fail, per-step results kept', async (t) => {
  const s: ParallelContainerRunState = {
    kind: 'ParallelContainerRun', max_state_visits: 5, timeout_seconds: 300, volumes: [], transitions: [], completion: 'best_effort',
    steps: [
      { name: 'a', ...step({ command: ['sh', '-c', 'echo nope >&2; exit 1'] }) },
      { name: 'b', ...step({ command: ['true'], image: 'localhost/orch-no-such-image:3' }) },
    ],
  };
  const r = await parallelContainerRunRunner(deps())(s, ctx());
  const o = r.output as Out;
  t.is(r.outcome.status, 'success');
  t.is(r.error, undefined);
  t.is(o.output.a?.exit_code, 1);
  t.is(o.output.a?.stderr, 'nope\n');
  t.is(o.output.b?.exit_code, null);
  t.regex((o.output.b as unknown as { error: string }).error, /orch-no-such-image:3 is not present/);
});

test('aborting the state kills every step', async (t) => {
  const ac = new AbortController();
  const c = ctx({ signal: ac.signal });
  const s: ParallelContainerRunState = {
    kind: 'ParallelContainerRun', max_state_visits: 5, timeout_seconds: 300, volumes: [], transitions: [], completion: 'best_effort',
    steps: [{ name: 'x', ...step({ command: ['sleep', '600'] }) }, { name: 'y', ...step({ command: ['sleep', '600'] }) }],
  };
  const run = parallelContainerRunRunner(deps())(s, c);
  await Promise.all([waitRunning(`${c.visitKey}:x`), waitRunning(`${c.visitKey}:y`)]);
  const t0 = Date.now();
  ac.abort(new Error('workflow cancelled'));
  const r = await run;
  // Far under the steps' 600 s: the abort killed them (the margin is for podman on a loaded machine).
  t.true(Date.now() - t0 < 60_000);
  t.is(r.outcome.status, 'failed', 'an aborted state is not a success, even best_effort');
  t.deepEqual(await leftovers(c.visitKey), []);
});
