// ava's configuration (here rather than in package.json: sortTestFiles must be a function).
//
// tsx is loaded through `require` in each worker, after ava's own modules, instead of `--import=tsx` on the worker's
// command line: ava's ~300 modules then load without going through the TypeScript loader's hooks (each resolve a
// round trip to the hooks thread), about 0.3 s of CPU less per test file (issue 15: the suite's wall time).
//
// The long poles (files that take a minute or more, measured by hand, docs/TESTING.md) start first: with two lanes,
// a two-minute file that starts last adds up to two minutes to the end of the run.
const LONG_POLES = [
  'test/packaging/image-smoke.test.ts',
  'test/bench/capacity.test.ts',
  'test/cluster/parking-memory.test.ts',
  'test/resilience/node-pg-outage.test.ts',
  'test/storage/hot-statements.test.ts',
  'test/workflow/registry-cli.test.ts',
  'test/cli/run-output.test.ts',
  'test/resilience/worker-redis-restart.test.ts',
  'test/cluster/hybrid-freeze.test.ts',
  'test/cluster/hybrid-lapsed.test.ts',
  'test/cluster/worker-process.test.ts',
  'test/cluster/worker-failover.test.ts',
  'test/cli/cli.test.ts',
  'test/examples/workflows.test.ts',
  'test/examples/dev-node.test.ts',
  'test/ui/dashboard.test.ts',
];

// Files whose assertions include a latency bound of the node under test that other test files' load can break
// (fuzz: issue 14's `/health` p99 < 100 ms, 111-143 ms with other files running beside it at load 9-16, 52-71 ms
// alone even at load 24). `npm test` runs them in a pass of their own after the rest, one at a time
// (ORCH_TEST_PASS=quiet), so the bound measures the node rather than the suite's other lanes; the rest run with
// ORCH_TEST_PASS=main. Unset (`npx ava <file>`), every file is a test file as before.
// ws-backpressure floods an in-process node's live feed with 60 MB while one client reads and one does not, and bounds
// the server's memory: it failed once in a four-lane run (and in none alone or at two lanes), so it runs alone too.
// input-bounds bounds the in-process node's /health latency (1 s) while it refuses a 1.4 MB manifest: 1,438 ms at four
// lanes and load ~13 (stop 35), under 200 ms alone.
// grep-redos bounds an fs.grep at 1 s, a worker thread's start included: 1,709 ms at four lanes and load ~20 (stop 35).
// fuse/write-read-cache counts the sizes of the kernel's read requests and the bytes it reads back, which the
// kernel's read-ahead and page cache decide: under load its largest read was 128 KiB once (stop 36, load 4-6) and it
// re-read pages three times (stop 34, four lanes); ~6-14 s alone.
const QUIET = [
  'test/gateway/fuzz.test.ts',
  'test/gateway/ws-backpressure.test.ts',
  'test/gateway/input-bounds.test.ts',
  'test/tools/grep-redos.test.ts',
  'test/fuse/write-read-cache.test.ts',
];
const PASS = process.env.ORCH_TEST_PASS;
// `npm test`'s passes run the test files compiled ahead to .test-build/ (scripts/build-tests.mjs: no tsx loader in
// each worker, ~1–2 s of CPU less per file); `npx ava <file>` runs the TypeScript through tsx as before.
const COMPILED = PASS === 'main' || PASS === 'quiet';
const at = (file) => (COMPILED ? `.test-build/${file.replace(/\.ts$/, '.js')}` : file);
const ALL = at('test/**/*.test.ts');
const files = PASS === 'quiet' ? QUIET.map(at) : PASS === 'main' ? [ALL, ...QUIET.map((f) => `!${at(f)}`)] : [ALL];

function rank(file) {
  const i = LONG_POLES.findIndex((p) => file.endsWith(at(p)));
  return i < 0 ? LONG_POLES.length : i;
}

export default {
  ...(COMPILED ? {} : { extensions: { ts: 'module' } }),
  // ORCH_FILE_TIMING=<file>: each worker appends its file's wall, CPU and exit delay there (scripts/ava-file-timing.cjs).
  // The watchdog ends a file that hangs (scripts/ava-file-watchdog.cjs).
  require: [...(COMPILED ? [] : ['tsx']), './scripts/ava-file-watchdog.cjs', ...(process.env.ORCH_FILE_TIMING ? ['./scripts/ava-file-timing.cjs'] : [])],
  workerThreads: false,
  files,
  timeout: '3m',
  // Three lanes (stop 36). A compiled test file's worker is mostly waiting (a node's start, a lease, podman): its files
  // were on the CPU for ~35 % of their lane time at two lanes, so a third lane fills the gaps. Four filled the CPUs
  // in stop 33 but broke latency bounds under load and read slower in stop 35 (docs/TESTING.md "Stop 33"–"Stop 36");
  // three passed the main pass at load 9-14 with every test green.
  concurrency: PASS === 'quiet' ? 1 : 3,
  // For the nodes the tests start (test/support/node-process.ts testNodeFlags): PostgreSQL's WebAssembly in a PGlite
  // node through V8's baseline compiler only, ~1.5 s of CPU less per node start (issue 15). Benchmarks, outside
  // ava, start nodes as users run them.
  environmentVariables: { ORCH_TEST_NODE_FLAGS: '--liftoff-only' },
  // The same in the workers, for the tests that run PGlite in process (storage, the workflow engine on PGlite, the
  // service suites): 65 → 53 s of CPU for three such files.
  nodeArguments: ['--liftoff-only'],
  // Then ava's own order (its default comparator).
  sortTestFiles: (a, b) => rank(a) - rank(b) || a.localeCompare(b, [], { numeric: true }),
};
