// The checks `npm test` runs, in lanes side by side instead of one after another (issue 15: the suite's wall time on
// two cores): the typecheck (about a minute of one core) in one; the emit-only build of dist/ that the tests' `orch`
// processes run, the test files' compile (scripts/build-tests.mjs, ~1 s), then the k6 scripts' typecheck, the
// generated code and dashboard checks and the import-cycle check in the other. Each step's output is printed when it
// ends, in one piece; the first failure is named and the exit code is 1 once every lane has finished.
//
// `--main-pass`: ava's main pass (ORCH_TEST_PASS=main) starts as soon as dist/ and the tests are built, beside the
// checks, instead of after them: the checks' second lane left a core idle for ~20-40 s while the typecheck ran (stop
// 35). A failed check stops ava (SIGINT) and fails the run; ava's own output streams as it comes.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = (p) => path.join(root, 'node_modules', p);
const node = process.execPath;

const build = { name: 'build:dist --no-check --if-stale', argv: [node, 'scripts/build.mjs', '--no-check', '--if-stale'] };
// The test files compiled to .test-build/ (about a second), which ava's passes run (scripts/build-tests.mjs).
const buildTests = { name: 'build:tests', argv: [node, 'scripts/build-tests.mjs'] };
const lanes = [
  [{ name: 'typecheck', argv: [node, bin('typescript/bin/tsc'), '--noEmit', '-p', 'tsconfig.json'] }],
  [
    build,
    buildTests,
    { name: 'typecheck bench/k6', argv: [node, bin('typescript/bin/tsc'), '--noEmit', '-p', 'bench/k6/tsconfig.json'] },
    { name: 'check:gen', argv: [node, 'scripts/gen-proto.mjs', '--check'] },
    { name: 'check:gen validators', argv: [node, 'scripts/gen-validators.mjs', '--check'] },
    { name: 'check:ui', argv: [node, 'scripts/check-ui.mjs'] },
    { name: 'import cycles', argv: [node, bin('tsx/dist/cli.mjs'), 'scripts/check-import-cycles.ts'] },
  ],
];
const withMainPass = process.argv.includes('--main-pass');

function run(step) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(step.argv[0], step.argv.slice(1), { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const done = (code, why) => {
      const secs = ((Date.now() - started) / 1000).toFixed(1);
      process.stdout.write(`> ${step.name} (${secs} s)${code === 0 ? '' : `: FAILED (${why})`}\n${out}`);
      resolve(code === 0);
    };
    child.on('error', (err) => done(1, err.message));
    child.on('close', (code, signal) => done(code ?? 1, signal ?? `exit ${code}`));
  });
}

const failed = [];
let ava; // the main pass, when started
let built;
const dist = new Promise((resolve) => (built = resolve));
const checks = Promise.all(
  lanes.map(async (lane) => {
    for (const step of lane) {
      const ok = await run(step);
      if (step === buildTests || !ok) built(ok);
      if (!ok) {
        failed.push(step.name);
        ava?.kill('SIGINT');
        return; // the rest of this lane depends on nothing failed, but one failure is enough to stop `npm test`
      }
    }
  }),
).then(() => built(false)); // a lane that failed before the build never resolved it

const mainPass = !withMainPass
  ? Promise.resolve(true)
  : dist.then(
      (ok) =>
        ok &&
        failed.length === 0 &&
        new Promise((resolve) => {
          ava = spawn(node, [bin('ava/entrypoints/cli.mjs')], { cwd: root, stdio: 'inherit', env: { ...process.env, ORCH_TEST_PASS: 'main' } });
          ava.on('error', (err) => {
            process.stderr.write(`npm test: ava did not start: ${err.message}\n`);
            resolve(false);
          });
          ava.on('close', (code) => resolve(code === 0));
        }),
    );

const [, passed] = await Promise.all([checks, mainPass]);
if (failed.length) {
  process.stderr.write(`npm test: ${failed.join(', ')} failed\n`);
  process.exit(1);
}
if (!passed) process.exit(1);
