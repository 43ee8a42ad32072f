// `npm test` runs the test files as JavaScript compiled ahead, instead of through tsx's loader in every ava worker
// (issue 15: the suite's wall time). tsx's hooks cost each worker ~0.5 s of CPU to register and ~1 s more for every
// graph of modules a file imports (a round trip to the hooks thread per module, even for compiled files: measured in
// docs/TESTING.md "Stop 35"), and the suite starts ~270 workers. This is the same transform tsx applies (esbuild, the
// project's tsconfig, keepNames), done once for all files in about a second.
//
// Output: .test-build/<path>.js for each .ts under test/, bench/ and scripts/. Each compiled file behaves as if it
// were at its source's place: `import.meta.url` (and .dirname, .filename) are the source file's, so the paths tests
// build from their own location (the checkout's root, fixtures, examples, helper scripts) are unchanged; and relative
// imports are rewritten:
// - into src/: to the same module in dist/, which `npm test` has just built (scripts/test-checks.mjs) — the tests
//   then run the code the node runs, and no second compile of src/ is needed;
// - into test/, bench/, scripts/: the compiled file (.ts → .js);
// - anything else (a .js, .mjs, .cjs or .json file): the original file.
//
// `npx ava test/x.test.ts` (ORCH_TEST_PASS unset) still runs the sources through tsx; see ava.config.mjs.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const OUT = path.join(root, '.test-build');
const COMPILED_DIRS = ['test', 'bench', 'scripts'];
const SKIP = [path.join(root, 'bench', 'k6')]; // k6's scripts run in k6, not in Node

function walk(dir, into = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (SKIP.includes(full)) continue;
    if (entry.isDirectory()) walk(full, into);
    else into.push(full);
  }
  return into;
}

const isTs = (file) => /\.m?ts$/.test(file) && !file.endsWith('.d.ts');
const toJs = (file) => file.replace(/\.ts$/, '.js').replace(/\.mts$/, '.mjs');

/** The specifier an emitted file at `outFile` (compiled from `srcFile`) should use for the source's `spec`. */
export function rewriteSpecifier(spec, srcFile, outFile, out = OUT) {
  if (!spec.startsWith('./') && !spec.startsWith('../')) return spec;
  const target = path.resolve(path.dirname(srcFile), spec);
  const rel = path.relative(root, target);
  const top = rel.split(path.sep)[0];
  let to;
  if (top === 'src') to = path.join(root, 'dist', toJs(path.relative(path.join(root, 'src'), target)));
  else if (COMPILED_DIRS.includes(top) && isTs(target)) to = path.join(out, toJs(rel));
  else to = target;
  const relSpec = path.relative(path.dirname(outFile), to).split(path.sep).join('/');
  return relSpec.startsWith('.') ? relSpec : `./${relSpec}`;
}

// `from "x"`, `import "x"`, `import("x")`, `export … from "x"`, as esbuild prints them (double quotes).
const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s*)"(\.\.?\/[^"]*)"/g;

// The compiled file's own location, replaced by its source's.
const IMPORT_META = /\bimport\.meta\.(url|dirname|filename)\b/g;

/** Compiles into `out` (under the checkout, so that packages resolve from its node_modules). */
export async function buildTests(out = OUT) {
  const started = Date.now();
  rmSync(out, { recursive: true, force: true });
  const files = COMPILED_DIRS.flatMap((d) => walk(path.join(root, d)));
  const sources = files.filter(isTs);
  const result = await build({
    entryPoints: sources,
    outdir: out,
    outbase: root,
    format: 'esm',
    platform: 'node',
    target: `node${process.versions.node}`,
    keepNames: true,
    bundle: false,
    write: false,
    logLevel: 'silent',
  });
  for (const file of result.outputFiles) {
    const outFile = file.path;
    const srcFile = path.join(root, path.relative(out, outFile)).replace(/\.js$/, '.ts').replace(/\.mjs$/, '.mts');
    const meta = { url: pathToFileURL(srcFile).href, dirname: path.dirname(srcFile), filename: srcFile };
    const text = file.text
      .replace(SPECIFIER, (_m, head, spec) => `${head}"${rewriteSpecifier(spec, srcFile, outFile, out)}"`)
      .replace(IMPORT_META, (_m, key) => JSON.stringify(meta[key]));
    mkdirSync(path.dirname(outFile), { recursive: true });
    writeFileSync(outFile, text);
  }
  return { files: sources.length, ms: Date.now() - started };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { files, ms } = await buildTests();
  process.stdout.write(`build-tests: ${files} files compiled to .test-build/ in ${ms} ms\n`);
}
