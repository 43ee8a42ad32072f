// A lone run's built-in steps are pipelined (src/workflow/engine/run.ts commitPipelined, writer.ts): the engine runs
// the next built-in state and sends its step while the previous step's commit is still in flight, on another
// connection; the database orders the two by the row's lock. Every step is still its own committed statement, the
// run's events are written once each and announced in order, and a state that acts (anything but a built-in) starts
// only once every step before it is committed. These tests watch the step statements on a real PostgreSQL. A step
// whose predecessor still waits in the writer's queue joins it (writer.ts maxJoin): the pipelining tests turn that off
// (maxJoin 1) to see two statements in flight; the joining tests are at the end.
import test from 'ava';
import type { Db, QueryOptions, QueryResult, Row } from '../../src/storage/db.ts';
import type { StateRunner } from '../../src/workflow/engine/runner-types.ts';
import { workflowStream } from '../../src/workflow/engine/events.ts';
import { manifest, startEngine } from './engine-harness.ts';

/** How the watched database treats one step statement: `delay` ms before it is sent, or `fail` instead of sending. */
type Plan = { delay?: number; fail?: boolean; wait?: Promise<unknown> } | undefined;

interface Watch {
  wrap(db: Db): Db;
  /** Step statements in flight now, and the most there ever were at once. */
  inFlight: number;
  maxInFlight: number;
  /** Step statements answered with no row updated (their step was applied by the one after it). */
  superseded: number;
  /** Step statements sent so far, and failed on purpose. */
  sent: number;
  failed: number;
}

/** Wraps the engine's database: every statement of the step writer (prepared as orch_workflow_steps or orch_workflow_steps_dedup) is counted and
 * may be delayed or failed by `plan`, which sees how many step statements are in flight when it is asked. */
function watchSteps(plan: (inFlight: number, n: number) => Plan = () => undefined): Watch {
  const w: Watch = {
    inFlight: 0,
    maxInFlight: 0,
    superseded: 0,
    sent: 0,
    failed: 0,
    wrap(db) {
      return new Proxy(db, {
        get(target, prop, receiver) {
          if (prop !== 'query') return Reflect.get(target, prop, receiver) as unknown;
          return async <R extends object = Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<R>> => {
            if (!options?.prepare?.startsWith('orch_workflow_steps')) return target.query<R>(sql, params, options);
            const p = plan(w.inFlight, w.sent++);
            w.inFlight++;
            w.maxInFlight = Math.max(w.maxInFlight, w.inFlight);
            try {
              if (p?.wait) await p.wait;
              if (p?.delay) await new Promise((r) => setTimeout(r, p.delay));
              if (p?.fail && ++w.failed) throw Object.assign(new Error('connection terminated unexpectedly (injected)'), { code: 'ECONNRESET' });
              const res = await target.query<R>(sql, params, options);
              if (res.rows.length === 0) w.superseded++;
              return res;
            } finally {
              w.inFlight--;
            }
          };
        },
      });
    },
  };
  return w;
}

/** A workflow of `n` built-in states in a row, each adding its index to the blackboard. */
function chain(name: string, n: number, last = ''): string {
  const states = Array.from({ length: n }, (_, i) => {
    const next = i + 1 < n ? `[{ target: s${i + 1} }]` : last ? `[{ target: ${last} }]` : '[]';
    return `    s${i}:\n      kind: System\n      command: 'update_blackboard {"v${i}": ${i}}'\n      transitions: ${next}\n`;
  }).join('');
  return manifest(name, 's0', states);
}

/** The run's events are exactly seq 1..N, each once, and its row's last_seq is N. */
async function assertWhole(t: import('ava').ExecutionContext, h: Awaited<ReturnType<typeof startEngine>>, id: string, steps: number): Promise<void> {
  const events = await h.events(id);
  t.deepEqual(events.map((e) => e.seq), Array.from({ length: events.length }, (_, i) => i + 1), 'no event missing or twice');
  // Started, entered s0, then completed + entered per transition, the last state's completed, the terminal event.
  t.is(events.length, 2 + 2 * (steps - 1) + 2);
  t.is(events.at(-1)!.type, 'WorkflowExecutionCompleted');
  const row = await h.waitFor(id);
  t.is(row.last_seq, events.length);
  t.deepEqual(
    Object.keys(row.blackboard ?? {}).filter((k) => k.startsWith('v')).length,
    steps,
  );
}

test('a lone run sends its next built-in step while the previous one commits; every event is written and announced once, in order', async (t) => {
  const { h, id, watch, announced } = await gatedChain(t, 'pipe', 10, { maxJoin: 1 });
  // Two of the run's step statements were at the database at once (one per step and in order before: 1).
  t.is(watch.maxInFlight, 2);
  await assertWhole(t, h, id, 10);
  // The live announcements (subscribed after the start, before its first step) are in order with no gap.
  t.true(announced.length >= 20, `announced ${announced.length}`);
  t.deepEqual(announced, Array.from({ length: announced.length }, (_, i) => announced[0]! + i));
});

/** Runs a chain of `steps` built-ins through a database whose step statements `plan` delays or fails; it must complete
 * whole, in its first claim (no step lost, no incarnation taken over). */
/**
 * Runs a chain of `steps` built-ins whose first step statement waits until the test has subscribed to the run's
 * stream (on a loaded machine the run could otherwise be several steps on first: 16 of 22 events announced once,
 * beside a typecheck); answers the run's seqs as announced, once it has completed.
 */
async function gatedChain(t: import('ava').ExecutionContext, name: string, steps: number, writer?: { maxJoin: number }): Promise<{ h: Awaited<ReturnType<typeof startEngine>>; id: string; watch: Watch; announced: number[] }> {
  let subscribed!: () => void;
  const gate = new Promise<void>((r) => (subscribed = r));
  const watch = watchSteps((_, n) => (n === 0 ? { wait: gate } : undefined));
  const h = await startEngine(t, { wrapDb: (db) => watch.wrap(db), ...(writer ? { writer } : {}) });
  await h.deploy(chain(name, steps));
  const id = await h.run(name);
  const announced: number[] = [];
  const sub = await h.bus.subscribe(workflowStream(id), (e) => announced.push(e.seq));
  subscribed();
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  await sub.close();
  return { h, id, watch, announced };
}

async function runThrough(t: import('ava').ExecutionContext, name: string, steps: number, plan: Parameters<typeof watchSteps>[0], maxJoin = 1): Promise<Watch> {
  const watch = watchSteps(plan);
  const h = await startEngine(t, { wrapDb: (db) => watch.wrap(db), writer: { maxJoin } });
  await h.deploy(chain(name, steps));
  const id = await h.run(name);
  const row = await h.waitFor(id, undefined, 30_000);
  t.is(row.status, 'completed', row.error ?? '');
  await assertWhole(t, h, id, steps);
  t.is(row.epoch, 0);
  return watch;
}

test('a pipelined step that reaches the row first carries the events of the step before it; that step then counts as committed', async (t) => {
  // The first of two step statements in flight is held back, so the second reaches the database first: it is applied
  // (with the first's events), and the first then finds the row past it and updates nothing.
  const watch = await runThrough(t, 'overtaken', 8, (inFlight) => (inFlight === 0 ? { delay: 60 } : undefined));
  t.true(watch.superseded >= 1, `superseded ${watch.superseded}`);
});

test('a step statement that fails while the next one is applied is covered by it', async (t) => {
  // The run's first step statement is held back, then fails (as on a dropped connection) after the next one, which
  // carries its events, was sent and applied.
  const watch = await runThrough(t, 'covered', 8, (inFlight, n) => (n === 0 && inFlight === 0 ? { delay: 60, fail: true } : undefined));
  t.true(watch.failed >= 1, `failed ${watch.failed}`);
});

test('a state that acts starts only once every step before it is committed', async (t) => {
  const watch = watchSteps(() => ({ delay: 20 }));
  let stepsInFlightAtStart = -1;
  let committedAtStart = -1;
  let h: Awaited<ReturnType<typeof startEngine>> | undefined;
  let runId = '';
  const acting: StateRunner<never> = async () => {
    stepsInFlightAtStart = watch.inFlight;
    const res = await h!.db.query<{ last_seq: number }>('SELECT last_seq FROM workflow_executions WHERE id = $1', [runId]);
    committedAtStart = res.rows[0]!.last_seq;
    return { output: { status: 'success' }, outcome: { kind: 'ContainerRun', status: 'success' } };
  };
  h = await startEngine(t, { wrapDb: (db) => watch.wrap(db), runners: { ContainerRun: acting } });
  await h.deploy(
    chain('acts', 4, 'act') + `    act:\n      kind: ContainerRun\n      image: alpine\n      command: ['true']\n      transitions: []\n`,
  );
  runId = await h.run('acts');
  const row = await h.waitFor(runId);
  t.is(row.status, 'completed', row.error ?? '');
  t.is(stepsInFlightAtStart, 0);
  // Started + entered s0 + 4 transitions (s0→s1 … s3→act), all committed before the acting state ran.
  t.is(committedAtStart, 2 + 2 * 4);
});

test('a lone run\'s chain of built-ins joins its steps while they wait in the writer\'s queue: one statement, every event written and announced once, in order', async (t) => {
  // Without joining, each of the 10 steps is its own statement and its own commit (10 statements).
  const { h, id, watch, announced } = await gatedChain(t, 'joined', 10);
  t.is(watch.sent, 1, 'the 10 steps went as one statement');
  await assertWhole(t, h, id, 10);
  // Every event after the start is announced once, in seq order, after the one commit.
  t.deepEqual(announced, Array.from({ length: 20 }, (_, i) => 3 + i));
});

test('joined steps are capped at maxJoin per statement, and the statements still commit in order', async (t) => {
  const watch = await runThrough(t, 'capped', 10, () => undefined, 4);
  // 10 steps at most 4 to a statement: at least 3 statements, and never more than two in flight.
  t.true(watch.sent >= 3, `sent ${watch.sent}`);
  t.true(watch.maxInFlight <= 2, `in flight ${watch.maxInFlight}`);
});

test('a joined statement that fails fails every step in it; the run resumes from its row and completes whole', async (t) => {
  const watch = watchSteps((_, n) => (n === 0 ? { fail: true } : undefined));
  const h = await startEngine(t, { wrapDb: (db) => watch.wrap(db), leaseMs: 1000 });
  await h.deploy(chain('refail', 6));
  const id = await h.run('refail');
  const row = await h.waitFor(id, undefined, 30_000);
  t.is(row.status, 'completed', row.error ?? '');
  t.is(watch.failed, 1);
  await assertWhole(t, h, id, 6);
});
