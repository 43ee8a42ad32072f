// Preload: the node's GC pauses over a bench's load window (between the first and second SIGUSR2, as
// bench/race-breakdown.ts sends them), by kind (1 scavenge, 4 incremental marking, 8 weak callbacks, 2 mark-compact),
// and the heap used before and after, written to GC_WINDOW (default gc-<pid>.json) at the second signal:
//   BENCH_NODE_OPTIONS="--require $PWD/bench/gc-window.cjs" GC_WINDOW=/tmp/gc.json npm run bench -- race-breakdown ...
// (issue 16: a node's scavenges per workflow showed what the 30 s of recent events kept in the old generation cost).
'use strict';
const { PerformanceObserver } = require('node:perf_hooks');
const fs = require('node:fs');

const file = process.env.GC_WINDOW || `gc-${process.pid}.json`;
let on = false;
let kinds = {};
let t0 = 0;
let heap0 = 0;
new PerformanceObserver((list) => {
  if (!on) return;
  for (const e of list.getEntries()) {
    const k = (kinds[e.detail?.kind ?? 0] ??= { n: 0, ms: 0 });
    k.n++;
    k.ms += e.duration;
  }
}).observe({ entryTypes: ['gc'] });
process.on('SIGUSR2', () => {
  if (!on) {
    on = true;
    kinds = {};
    t0 = Date.now();
    heap0 = process.memoryUsage().heapUsed;
    return;
  }
  on = false;
  fs.writeFileSync(file, JSON.stringify({ seconds: (Date.now() - t0) / 1000, kinds, heapUsedBefore: heap0, heapUsedAfter: process.memoryUsage().heapUsed }));
});
