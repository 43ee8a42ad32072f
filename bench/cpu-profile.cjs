// Preload for profiling a process that is started for us (e.g. the `orch up` of bench/webhooks.ts):
//   NODE_OPTIONS='--require ./bench/cpu-profile.cjs' CPU_PROFILE=/tmp/node.cpuprofile
// node refuses --cpu-prof in NODE_OPTIONS; this starts the V8 sampling profiler through the inspector instead and
// writes the .cpuprofile (open it in Chrome DevTools or speedscope) when the process exits.
'use strict';
const inspector = require('node:inspector');
const fs = require('node:fs');

const session = new inspector.Session();
session.connect();
session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 500 }, () => session.post('Profiler.start')));
let written = false;
process.on('exit', () => {
  if (written) return;
  written = true;
  // The inspector session answers synchronously inside 'exit', so the file is written before the process ends.
  session.post('Profiler.stop', (err, r) => {
    if (!err) fs.writeFileSync(process.env.CPU_PROFILE || `node-${process.pid}.cpuprofile`, JSON.stringify(r.profile));
  });
});
