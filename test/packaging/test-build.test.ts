// Issue 15 (the suite's wall time): `npm test` runs the test files compiled ahead to .test-build/
// (scripts/build-tests.mjs) instead of through tsx in every ava worker. A compiled file must behave as its source
// does: its imports of src/ reach the same modules in dist/, its own location (import.meta) is its source's, and other
// files it imports are the originals.
import test from 'ava';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUILD = path.join(ROOT, 'scripts/build-tests.mjs');

interface BuildTests {
  OUT: string;
  rewriteSpecifier(spec: string, srcFile: string, outFile: string): string;
}

const load = async (): Promise<BuildTests> => (await import(BUILD)) as BuildTests;

test('imports of src/ go to dist/, of test/ and bench/ to the compiled file, of other files to the original', async (t) => {
  const { OUT, rewriteSpecifier } = await load();
  const src = path.join(ROOT, 'test/workflow/engine.test.ts');
  const out = path.join(OUT, 'test/workflow/engine.test.js');
  t.is(rewriteSpecifier('../../src/workflow/engine/run.ts', src, out), '../../../dist/workflow/engine/run.js');
  t.is(rewriteSpecifier('../../src/util/deadline.js', src, out), '../../../dist/util/deadline.js');
  t.is(rewriteSpecifier('../support/pg.ts', src, out), '../support/pg.js');
  t.is(rewriteSpecifier('./manifest-fixtures.ts', src, out), './manifest-fixtures.js');
  t.is(rewriteSpecifier('../../bench/stats.ts', src, out), '../../bench/stats.js');
  t.is(rewriteSpecifier('../support/block-loop.cjs', src, out), '../../../test/support/block-loop.cjs');
  t.is(rewriteSpecifier('../../bin/entry.js', src, out), '../../../bin/entry.js');
  t.is(rewriteSpecifier('ava', src, out), 'ava');
  t.is(rewriteSpecifier('node:path', src, out), 'node:path');
});

test('compiled files run under plain node: src/ from dist/, their own location their source\'s', async (t) => {
  const { buildTests } = (await import(BUILD)) as { buildTests(out: string): Promise<{ files: number }> };
  // Its own output dir (the suite's own .test-build/ is in use), under the checkout so that packages resolve.
  const out = await mkdtemp(path.join(ROOT, '.test-build-check-'));
  t.teardown(() => rm(out, { recursive: true, force: true }));
  const { files } = await buildTests(out);
  t.true(files > 300, `${files} files compiled`);
  const compiled = (file: string): string => pathToFileURL(path.join(out, file)).href;
  // No loader: a TypeScript module anywhere in these graphs would fail to load.
  const probe = [
    `const fixtures = await import(${JSON.stringify(compiled('test/workflow/manifest-fixtures.js'))});`,
    `const node = await import(${JSON.stringify(compiled('test/support/node-process.js'))});`,
    `const stats = await import(${JSON.stringify(compiled('bench/stats.js'))});`,
    'process.stdout.write(JSON.stringify({ invalid: fixtures.invalidFixtures().length, bin: node.ORCH_BIN, stats: Object.keys(stats).length }));',
  ].join('\n');
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', probe], { cwd: ROOT });
  const seen = JSON.parse(stdout) as { invalid: number; bin: string; stats: number };
  // The fixtures are read beside the source file (nothing is copied to the output).
  t.true(seen.invalid > 5, `${seen.invalid} invalid-manifest fixtures found`);
  t.is(seen.bin, path.join(ROOT, 'bin/orch.js'));
  t.true(seen.stats > 0);
  // A test's imports of src/ are dist/'s modules.
  const text = await readFile(path.join(out, 'test/util/deadline.test.js'), 'utf8');
  t.regex(text, /from "\.\.\/\.\.\/\.\.\/dist\/util\/deadline\.js"/);
  t.notRegex(text, /\bimport\.meta\.url\b/);
});
