// `npm run build` (and `npm install`, through `prepare`): compiles src/ to dist/ with tsc (tsconfig.build.json) and
// copies the files tsc does not (migrations, the sandbox bootstrap), so that bin/orch.js, `npm start` and the image
// run plain JavaScript instead of compiling TypeScript on every start (issue 15 item 4).
//
// dist/.build-stamp gets the time the build STARTED: bin/orch.js treats dist as stale when any file under src/ is
// newer than that, so a source edited during or after a build is never hidden behind an old dist.
//
// --no-check (used by `npm test`, right after `npm run typecheck` checked every file): emit only, tsc's noCheck —
// about half the CPU of a checked build.
//
// --if-stale (used by `npm test`): nothing to do when dist/ is current — its stamp at least as new as every file
// under src/ (bin/entry.js's own test) and as the build's inputs here (this script, the bundler, the tsconfigs, the
// lockfile). In CI `npm ci`'s `prepare` has just built it: ~12 s of CPU and ~20 s before ava starts, saved.
//
// --if-possible (used by `prepare`): when TypeScript is not installed (`npm ci --omit=dev`), say so and exit 0
// instead of failing the install; bin/orch.js then runs the sources through tsx.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { bundleDist } from './bundle.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = path.join(root, 'src');
const dist = path.join(root, 'dist');
const stamp = path.join(dist, '.build-stamp');
const ifPossible = process.argv.includes('--if-possible');
const noCheck = process.argv.includes('--no-check');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');

if (!existsSync(tsc)) {
  if (ifPossible) {
    process.stderr.write('orch: TypeScript is not installed, skipping the build; bin/orch.js will run the sources through tsx\n');
    process.exit(0);
  }
  process.stderr.write('orch: TypeScript is not installed; run `npm install` (with dev dependencies) first\n');
  process.exit(1);
}

if (process.argv.includes('--if-stale')) {
  const { buildState } = await import(pathToFileURL(path.join(root, 'bin', 'entry.js')).href);
  const inputs = ['scripts/build.mjs', 'scripts/bundle.mjs', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];
  const current =
    buildState({}).use === 'dist' &&
    existsSync(path.join(dist, 'bundle')) &&
    inputs.every((f) => !existsSync(path.join(root, f)) || statSync(path.join(root, f)).mtimeMs <= statSync(stamp).mtimeMs);
  if (current) {
    process.stdout.write('build: dist/ is current, nothing to do\n');
    process.exit(0);
  }
}

const started = new Date();
const res = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json'), ...(noCheck ? ['--noCheck'] : [])], { stdio: 'inherit', cwd: root });
if (res.status !== 0) process.exit(res.status ?? 1);

// Everything under src/ that is not TypeScript is a runtime asset (NNN_name.sql, bootstrap.mjs): same place in dist/.
function copyAssets(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const from = path.join(dir, entry.name);
    if (entry.isDirectory()) copyAssets(from);
    else if (!entry.name.endsWith('.ts')) {
      const to = path.join(dist, path.relative(src, from));
      mkdirSync(path.dirname(to), { recursive: true });
      cpSync(from, to, { preserveTimestamps: true });
    }
  }
}
copyAssets(src);
// dist/bundle/: the node's code as a few files instead of ~1,600 (scripts/bundle.mjs; start-up, issue 15 item 4).
await bundleDist(root);

writeFileSync(stamp, `${started.toISOString()}\n`);
utimesSync(stamp, started, started);
