// Preload for profiling a process that is started for us (e.g. the `orch up` of bench/webhooks.ts):
//   NODE_OPTIONS='--require ./bench/cpu-profile.cjs' CPU_PROFILE=/tmp/node.cpuprofile
// node refuses --cpu-prof in NODE_OPTIONS; this starts the V8 sampling profiler through the inspector instead and
// writes the .cpuprofile (open it in Chrome DevTools or speedscope) when the process exits.
// With CPU_PROFILE_WINDOW=1 the profiler starts at the first SIGUSR2 and the profile is written at the second, so a
// bench profiles just its load window (bench/density.ts), not the process's start-up.
'use strict';
const inspector = require('node:inspector');
const fs = require('node:fs');

const session = new inspector.Session();
session.connect();
let written = false;
let started = false;
const file = process.env.CPU_PROFILE || `node-${process.pid}.cpuprofile`;

function start() {
  started = true;
  session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 500 }, () => session.post('Profiler.start')));
}

function stop() {
  if (written || !started) return;
  written = true;
  // The inspector session answers synchronously inside 'exit', so the file is written before the process ends.
  session.post('Profiler.stop', (err, r) => {
    if (!err) fs.writeFileSync(file, JSON.stringify(r.profile));
  });
}

if (process.env.CPU_PROFILE_WINDOW === '1') {
  process.on('SIGUSR2', () => (started ? stop() : start()));
} else {
  start();
}
process.on('exit', stop);
