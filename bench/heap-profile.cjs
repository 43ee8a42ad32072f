// Preload: V8's sampling heap profiler over a bench's load window (between the first and second SIGUSR2, as
// bench/race-breakdown.ts sends them), counting every allocation, collected or not, written to HEAP_PROFILE
// (default heap-<pid>.heapprofile; open it in Chrome DevTools' Memory tab):
//   BENCH_NODE_OPTIONS="--require $PWD/bench/heap-profile.cjs" HEAP_PROFILE=/tmp/h.heapprofile npm run bench -- race-breakdown ...
// (issue 16: ~300 kB allocated per workflow at c = 64 over HTTP, by function).
'use strict';
const inspector = require('node:inspector');
const fs = require('node:fs');

const file = process.env.HEAP_PROFILE || `heap-${process.pid}.heapprofile`;
const session = new inspector.Session();
session.connect();
let on = false;
process.on('SIGUSR2', () => {
  if (!on) {
    on = true;
    session.post('HeapProfiler.enable', () =>
      session.post('HeapProfiler.startSampling', { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }),
    );
    return;
  }
  session.post('HeapProfiler.stopSampling', (err, r) => {
    if (!err) fs.writeFileSync(file, JSON.stringify(r.profile));
  });
});
