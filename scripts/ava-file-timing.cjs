// Per test file timing for ava (issue 15: the suite's wall time). Loaded into every ava worker when ORCH_FILE_TIMING
// names a file (ava.config.mjs); each worker appends one JSON line there when it exits:
//   { file, start, finished, end, cpu, childCpu }
// start: the worker process's start; finished: when ava was told its tests (and hooks) were done; end: its exit
// (end − finished is time a leftover timer, socket or child kept the worker, and its lane, busy for nothing);
// cpu: the worker's own CPU seconds; childCpu: its waited-for children's (the nodes, CLIs and podman it ran).
//   ORCH_FILE_TIMING=/tmp/t.jsonl npx ava
// It reads the file name from ava's worker options (an internal module), so it is a measuring tool, not a test.
const fs = require('node:fs');
const path = require('node:path');

const out = process.env.ORCH_FILE_TIMING;
const options = require(path.resolve(__dirname, '../node_modules/ava/lib/worker/options.cjs')).get();
const file = path.relative(process.cwd(), options.file.startsWith('file:') ? new URL(options.file).pathname : options.file);
let finished = 0;
const send = process.send;
process.send = function sendAndNote(message, ...rest) {
  if (message?.ava?.type === 'worker-finished') finished = Date.now();
  return send.call(this, message, ...rest);
};
process.on('exit', () => {
  const own = process.cpuUsage();
  let childCpu = 0;
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    childCpu = (Number(fields[13]) + Number(fields[14])) / 100; // cutime + cstime, in clock ticks of 1/100 s
  } catch {
    // not Linux: own CPU only
  }
  const line = { file, start: Math.round(performance.timeOrigin), finished, end: Date.now(), cpu: (own.user + own.system) / 1e6, childCpu };
  fs.appendFileSync(out, `${JSON.stringify(line)}\n`);
});
