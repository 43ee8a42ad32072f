// A step writes only the blackboard keys it changed (src/workflow/engine/blackboard-patch.ts, writer.ts `bb_patch`):
// the row's blackboard is updated as `blackboard || patch`. Before, every step sent the whole blackboard, so a run
// whose blackboard is large paid its size on the wire and in PostgreSQL's JSON parse at every step (O(n^2) bytes over
// a run that grows it). The pipelined-step tests (engine-pipeline.test.ts) check the blackboard stays whole when a
// step overtakes the one before it.
import test from 'ava';
import type { Db, QueryOptions, QueryResult, Row } from '../../src/storage/db.ts';
import { blackboardPatch } from '../../src/workflow/engine/blackboard-patch.ts';
import { manifest, startEngine } from './engine-harness.ts';

/** Wraps the engine's database to keep the parameter bytes of every step statement (orch_workflow_step*). */
function stepBytes(delayFirst = false): { sizes: number[]; wrap: (db: Db) => Db } {
  const sizes: number[] = [];
  let inFlight = 0;
  return {
    sizes,
    wrap: (db) =>
      new Proxy(db, {
        get(target, prop, receiver) {
          if (prop !== 'query') return Reflect.get(target, prop, receiver) as unknown;
          return async <R extends object = Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<R>> => {
            if (!options?.prepare?.startsWith('orch_workflow_step')) return target.query<R>(sql, params, options);
            sizes.push((params ?? []).reduce<number>((n, p) => n + Buffer.byteLength(typeof p === 'string' ? p : JSON.stringify(p)), 0));
            // delayFirst: a statement sent while none is in flight is held back, so a pipelined next step lands first.
            const hold = delayFirst && inFlight === 0;
            inFlight++;
            try {
              if (hold) await new Promise((r) => setTimeout(r, 60));
              return await target.query<R>(sql, params, options);
            } finally {
              inFlight--;
            }
          };
        },
      }),
  };
}

const STEPS = 10;
const chain = manifest(
  'big',
  's0',
  Array.from({ length: STEPS }, (_, i) => {
    const next = i + 1 < STEPS ? `[{ target: s${i + 1} }]` : '[]';
    return `    s${i}:\n      kind: System\n      command: 'update_blackboard {"v${i}": ${i}}'\n      transitions: ${next}\n`;
  }).join(''),
);

// Each step its own statement (maxJoin 1), then (joined) the run's steps joined in the writer's queue, their patches merged.
for (const [overtaken, joined] of [[false, false], [true, false], [false, true]] as const) {
test(`a step sends the blackboard keys it changed, not the whole blackboard; the row ends whole${overtaken ? ' (each pipelined step overtakes the one before it)' : ''}${joined ? ' (steps joined: one statement)' : ''}`, async (t) => {
  const watch = stepBytes(overtaken);
  const h = await startEngine(t, { wrapDb: watch.wrap, ...(joined ? {} : { writer: { maxJoin: 1 } }) });
  await h.deploy(chain);
  const big = 'x'.repeat(20_000);
  const id = await h.run('big', { blackboard: { big, nested: { a: [1, 2, 3] } } });
  const row = await h.waitFor(id);
  t.is(row.status, 'completed', row.error ?? '');
  if (joined) t.is(watch.sizes.length, 1, `step statements ${watch.sizes.length}`);
  else t.true(watch.sizes.length >= STEPS, `step statements ${watch.sizes.length}`);
  // Each step statement carried the 20 kB seed before (>= 20,000 bytes each); now a few hundred bytes of its own keys.
  // Joined, the one statement carries the 10 steps' events and keys: still less than the seed once.
  t.true(Math.max(...watch.sizes) < (joined ? 20_000 : 5_000), `step statement parameter bytes ${watch.sizes.join(', ')}`);
  t.is(row.blackboard.big, big);
  t.deepEqual(row.blackboard.nested, { a: [1, 2, 3] });
  for (let i = 0; i < STEPS; i++) t.is(row.blackboard[`v${i}`], i);
  t.deepEqual(Object.keys(row.blackboard).filter((k) => /^s\d$/.test(k)).length, STEPS, 'every state output under its name');
  t.is(row.epoch, 0, 'no step lost: the run never started over');
});
}

test('blackboardPatch: the keys replaced or added, by reference; a removed key or an undefined value writes it whole', (t) => {
  const shared = { deep: [1] };
  const before = { a: 1, b: shared, c: 'x' };
  t.deepEqual(blackboardPatch(before, before), {});
  t.deepEqual(blackboardPatch(before, { ...before, c: 'y', d: null }), { c: 'y', d: null });
  // The same contents under a new object is sent again (a reference check, never a deep walk).
  t.deepEqual(blackboardPatch(before, { ...before, b: { deep: [1] } }), { b: { deep: [1] } });
  t.is(blackboardPatch(before, { a: 1, b: shared }), undefined);
  t.is(blackboardPatch(before, { ...before, e: undefined }), undefined);
});
