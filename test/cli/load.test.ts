// The LOAD column of `orch node ls` (issue 15 item 7: it was the heartbeat's raw JSON). The end-to-end check on a
// real node is in run-output.test.ts; here the two shapes nodes report and what is not a load.
import test from 'ava';
import { formatLoad } from '../../src/cli/load.ts';

test("a worker's heartbeat load reads as words", (t) => {
  t.is(formatLoad({ active_execution_count: 3, cpu_utilization_percent: 12.4, memory_utilization_percent: 55.5 }), 'cpu 12% mem 56% execs 3');
});

test("a controller's or hybrid's own load reads as words", (t) => {
  t.is(formatLoad({ cpu_load_1m: 0.5234, memory_utilization_percent: 41 }), 'load 0.52 mem 41%');
});

test("the heartbeat's event-loop delay reads as a duration, not as its key", (t) => {
  t.is(formatLoad({ cpu_utilization_percent: 100, active_execution_count: 0, event_loop_delay_ms: 4785.7 }), 'cpu 100% execs 0 loop 4.8 s');
  t.is(formatLoad({ event_loop_delay_ms: 12.4 }), 'loop 12 ms');
});

test('no load, or keys it does not know', (t) => {
  t.is(formatLoad(null), '-');
  t.is(formatLoad({}), '-');
  t.is(formatLoad([1]), '-');
  t.is(formatLoad({ gpu_percent: 7, cpu_load_1m: 1 }), 'load 1.00 gpu_percent 7');
});
