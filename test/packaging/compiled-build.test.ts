// Issue 15 item 4: `orch` compiled TypeScript on every call (tsx), 3-5 s per `npx orch …` under load. `npm install`
// now builds dist/ (`prepare`), and bin/orch.js and `npm start` run it. These tests watch which modules the process
// really resolves (test/support/module-trace.mjs): the compiled dist/ entry, and no TypeScript source. The build
// bundles the node (scripts/bundle.mjs): a trace lists the chunks it loaded, read back as the files they hold
// (test/support/bundle-contents.ts), so what a process ran is still checked file by file and package by package.
//
// They need a current build: `npm test` makes one (`npm run build:dist`) before ava. Run alone after editing src/,
// they fail and say so, which is the truth: bin/orch.js would then run the sources.
import test from 'ava';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { eventually } from '../support/node-process.ts';
import { expandBundle } from '../support/bundle-contents.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TRACE_HOOK = pathToFileURL(path.join(ROOT, 'test/support/module-trace.mjs')).href;
const DIST = pathToFileURL(path.join(ROOT, 'dist')).href + '/';
const BUNDLE = `${DIST}bundle/`;
const SRC = pathToFileURL(path.join(ROOT, 'src')).href + '/';

interface Traced {
  dir: string;
  trace: string;
  env: NodeJS.ProcessEnv;
}

async function traced(t: import('ava').ExecutionContext): Promise<Traced> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-compiled-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const trace = path.join(dir, 'modules.txt');
  const { ORCH_FROM_SOURCE: _ignored, ...rest } = process.env;
  return { dir, trace, env: { ...rest, ORCH_MODULE_TRACE: trace, NODE_OPTIONS: `--import=${TRACE_HOOK}` } };
}

/** What the process loaded: the traced URLs, each chunk of the bundle followed by the files it holds. */
async function modules(trace: string): Promise<string[]> {
  return expandBundle(ROOT, await tracedUrls(trace));
}

async function tracedUrls(trace: string): Promise<string[]> {
  return (await readFile(trace, 'utf8').catch(() => '')).split('\n').filter(Boolean);
}

async function assertBuildCurrent(t: import('ava').ExecutionContext): Promise<void> {
  const { buildState } = (await import(pathToFileURL(path.join(ROOT, 'bin/entry.js')).href)) as { buildState(env?: NodeJS.ProcessEnv): { use: string; why?: string } };
  const state = buildState({});
  t.is(state.use, 'dist', `the compiled build is not current (${state.why}): run \`npm run build:dist\` (npm test does)`);
}

for (const flag of ['--help', '--version']) {
  test(`bin/orch.js ${flag} runs the compiled dist/, not the TypeScript sources`, async (t) => {
    await assertBuildCurrent(t);
    const { trace, env } = await traced(t);
    const res = spawnSync(process.execPath, [path.join(ROOT, 'bin/orch.js'), flag], { env, encoding: 'utf8', timeout: 60_000 });
    t.is(res.status, 0, res.stderr);
    t.regex(res.stdout, flag === '--help' ? /Usage: orch/ : /\d+\.\d+\.\d+/);
    const loaded = await modules(trace);
    t.true(loaded.includes(`${DIST}cli/main.js`), `dist/cli/main.js was not loaded; loaded:\n${loaded.join('\n')}`);
    t.deepEqual(loaded.filter((u) => u.startsWith(SRC)), [], 'no module from src/');
    t.false(loaded.some((u) => /\/node_modules\/tsx\//.test(u)), 'tsx was not loaded');
    // What only `up` and `token` use (the config's parser and validator, the dev identity, the logger) is loaded by
    // them, not by every client command (CLI start-up).
    t.deepEqual([...new Set(loaded.map((u) => /\/node_modules\/(yaml|ajv|jose|pino)\//.exec(u)?.[1]).filter(Boolean))], [], 'loaded by a client command');
  });
}

test('`npm start` runs the compiled node from dist/ and stops on SIGTERM', async (t) => {
  await assertBuildCurrent(t);
  const { dir, trace, env } = await traced(t);
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...env, ORCH_DATA_DIR: path.join(dir, 'data'), ORCH_HTTP_PORT: '0', ORCH_GRPC_PORT: '0', ORCH_CLUSTER_GRPC_PORT: '0', ORCH_CONFIG: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  let hasExited = false;
  const exited = new Promise<void>((resolve) => child.once('exit', () => ((hasExited = true), resolve())));
  t.teardown(() => {
    if (!hasExited) child.kill('SIGKILL');
  });
  const up = await eventually(async () => (/ is up\n/.test(output) ? 'up' : hasExited ? 'exited' : undefined), 180_000, 'the banner of npm start');
  t.is(up, 'up', output.slice(-3000));
  const urls = await tracedUrls(trace);
  // The node's code came from the bundle: no file of dist/ is loaded one by one (start-up: ~1,600 files were).
  t.true(urls.includes(`${BUNDLE}cli/main.js`), `dist/bundle/cli/main.js was not loaded; loaded:\n${urls.slice(0, 50).join('\n')}`);
  t.deepEqual(urls.filter((u) => u.startsWith(DIST) && !u.startsWith(BUNDLE)), [], 'files of dist/ loaded outside the bundle');
  const loaded = expandBundle(ROOT, urls);
  t.true(loaded.includes(`${DIST}cli/main.js`), `dist/cli/main.js was not loaded; loaded:\n${loaded.slice(0, 50).join('\n')}`);
  t.true(loaded.includes(`${DIST}node/node.js`), 'the node itself came from dist/');
  t.deepEqual(loaded.filter((u) => u.startsWith(SRC)), [], 'no module from src/');
  // Loaded on first use, not at start (start-up time): the LLM SDKs, the MCP SDK and the OTLP trace exporters (a node
  // with no OTLP endpoint exports nothing) (imported, so traced here; the CommonJS ones required lazily through
  // src/util/lazy-require.ts do not pass the ESM hooks this trace uses), and pg on a node without a database URL.
  t.deepEqual(
    [...new Set(loaded.map((u) => /\/node_modules\/(openai|@anthropic-ai\/sdk|@modelcontextprotocol\/sdk|@opentelemetry\/exporter-trace-otlp-[a-z]+|pg)\//.exec(u)?.[1]).filter(Boolean))],
    [],
    'an SDK that is loaded on first use was loaded at start',
  );
  child.kill('SIGTERM');
  await exited;
  t.regex(output, /shutting down gracefully/);
});
