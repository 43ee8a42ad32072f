// A deadline per test file, loaded into every ava worker (ava.config.mjs). ava's own `timeout` is an inactivity
// timeout for the whole run: while other files report, a test that hangs in one file holds its lane for good (stop
// 34: cluster/membership waited 20 minutes, and only the CI's limit would have ended the run). A worker still
// running ORCH_TEST_FILE_DEADLINE_MS after it started (default 25 minutes: above the longest file's own t.timeout,
// the image smoke's 20) names its file and exits 1, which ava reports as that file's failure.
const path = require('node:path');

const DEFAULT_MS = 25 * 60_000;
const ms = Number(process.env.ORCH_TEST_FILE_DEADLINE_MS) || DEFAULT_MS;
const options = require(path.resolve(__dirname, '../node_modules/ava/lib/worker/options.cjs')).get();
const file = path.relative(process.cwd(), options.file.startsWith('file:') ? new URL(options.file).pathname : options.file);

setTimeout(() => {
  process.stderr.write(`\nava-file-watchdog: ${file} still running ${ms} ms after its worker started; stopping it (ORCH_TEST_FILE_DEADLINE_MS)\n`);
  process.exit(1);
}, ms).unref();
