// A test file that hangs must fail the run with its name, not hold its lane until the CI's limit
// (scripts/ava-file-watchdog.cjs): ava's inactivity timeout never fires while other files keep reporting.
import test from 'ava';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('a file still running after its deadline is stopped and named; a file within it is not', async (t) => {
  // A project of its own under the checkout (packages resolve from its node_modules), with ava's inactivity timeout
  // far above the deadline, as in the suite where other files keep reporting.
  const dir = await mkdtemp(path.join(ROOT, '.test-watchdog-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, 'package.json'), '{ "type": "module" }\n');
  await writeFile(
    path.join(dir, 'ava.config.mjs'),
    `export default { files: ['*.test.mjs'], require: [${JSON.stringify(path.join(ROOT, 'scripts/ava-file-watchdog.cjs'))}], workerThreads: false, timeout: '10m' };\n`,
  );
  await writeFile(path.join(dir, 'hangs.test.mjs'), "import test from 'ava';\ntest('waits forever', () => new Promise(() => { setInterval(() => {}, 1000); }));\n");
  await writeFile(path.join(dir, 'quick.test.mjs'), "import test from 'ava';\ntest('passes', (t) => t.pass());\n");
  const started = Date.now();
  const { code, out } = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
    const p = spawn(process.execPath, [path.join(ROOT, 'node_modules/ava/entrypoints/cli.mjs')], {
      cwd: dir,
      env: { ...process.env, ORCH_TEST_FILE_DEADLINE_MS: '4000', ORCH_TEST_PASS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    p.stdout.on('data', (b: Buffer) => (text += b.toString()));
    p.stderr.on('data', (b: Buffer) => (text += b.toString()));
    p.on('error', reject);
    p.on('close', (c) => resolve({ code: c, out: text }));
  });
  t.log(`ava ended after ${Date.now() - started} ms`);
  t.not(code, 0, out);
  t.regex(out, /ava-file-watchdog: hangs\.test\.mjs still running 4000 ms/);
  t.regex(out, /1 test passed|passes/);
  t.notRegex(out, /quick\.test\.mjs still running/);
});
