// The checks `npm test` runs before ava, in two lanes side by side instead of one after another (issue 15: the
// suite's wall time on two cores): the typecheck (about a minute of one core) in one, everything else in the other:
// the k6 scripts' typecheck, the emit-only build of dist/ that the tests' `orch` processes run, the generated code
// and dashboard checks, and the import-cycle check. Each step's output is printed when it ends, in one piece; the
// first failure is named and the exit code is 1 once both lanes have finished.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = (p) => path.join(root, 'node_modules', p);
const node = process.execPath;

const lanes = [
  [{ name: 'typecheck', argv: [node, bin('typescript/bin/tsc'), '--noEmit', '-p', 'tsconfig.json'] }],
  [
    { name: 'typecheck bench/k6', argv: [node, bin('typescript/bin/tsc'), '--noEmit', '-p', 'bench/k6/tsconfig.json'] },
    { name: 'build:dist --no-check', argv: [node, 'scripts/build.mjs', '--no-check'] },
    { name: 'check:gen', argv: [node, 'scripts/gen-proto.mjs', '--check'] },
    { name: 'check:gen validators', argv: [node, 'scripts/gen-validators.mjs', '--check'] },
    { name: 'check:ui', argv: [node, 'scripts/check-ui.mjs'] },
    { name: 'import cycles', argv: [node, bin('tsx/dist/cli.mjs'), 'scripts/check-import-cycles.ts'] },
  ],
];

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
await Promise.all(
  lanes.map(async (lane) => {
    for (const step of lane) {
      if (!(await run(step))) {
        failed.push(step.name);
        return; // the rest of this lane depends on nothing failed, but one failure is enough to stop `npm test`
      }
    }
  }),
);
if (failed.length) {
  process.stderr.write(`npm test: ${failed.join(', ')} failed\n`);
  process.exit(1);
}
