// Issue 15 item 3: `npm test` passed only on a machine someone had set up by hand. Its `pretest`, scripts/preflight.mjs,
// now checks what the suite needs and, when something is missing and it cannot set it up itself (not root, or no
// apt-get), fails at once with one line naming what is missing and the one command to run. Here the machine is left
// alone: PATH points at a directory holding only some of the tools, and the service URLs at closed ports.
import test from 'ava';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PREFLIGHT = path.join(ROOT, 'scripts/preflight.mjs');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function preflight(env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(process.execPath, [PREFLIGHT], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    // 'close', not 'exit': 'exit' can come before the last of stdout/stderr has been read (empty stderr seen in the full suite).
    child.once('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
  });
}

/** A directory for PATH holding links to only the named tools of the real PATH (no apt-get: no setup is tried). */
async function pathWith(t: import('ava').ExecutionContext, tools: string[]): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-preflight-path-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const tool of tools) {
    const found = (process.env.PATH ?? '').split(path.delimiter).map((d) => path.join(d, tool)).find((p) => existsSync(p));
    if (found) await symlink(found, path.join(dir, tool));
  }
  return dir;
}

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

test('preflight: with the tools missing from PATH and no apt-get, one line names them and the one command', async (t) => {
  const run = await preflight({ ...process.env, PATH: await pathWith(t, []) });
  t.is(run.code, 1);
  t.is(run.stdout, '');
  const lines = run.stderr.trim().split('\n');
  t.is(lines.length, 1, run.stderr);
  t.regex(lines[0]!, /bubblewrap/);
  t.regex(lines[0]!, /slirp4netns/);
  t.regex(lines[0]!, /podman/);
  t.regex(lines[0]!, /libfuse/);
  t.regex(lines[0]!, /run `sudo scripts\/setup-test-machine\.sh`/);
  t.log(`${run.ms} ms`);
});

test('preflight: PostgreSQL and Redis not answering are named, nothing else when the tools are there', async (t) => {
  const [pg, redis] = [await closedPort(), await closedPort()];
  const run = await preflight({
    ...process.env,
    PATH: await pathWith(t, ['bwrap', 'slirp4netns', 'podman', 'fusermount3']),
    DATABASE_URL: `postgres://postgres@127.0.0.1:${pg}/postgres`,
    REDIS_URL: `redis://127.0.0.1:${redis}`,
  });
  t.is(run.code, 1);
  t.is(run.stderr.trim().split('\n').length, 1, run.stderr);
  t.regex(run.stderr, new RegExp(`missing PostgreSQL at 127\\.0\\.0\\.1:${pg}, Redis at 127\\.0\\.0\\.1:${redis};`));
  t.regex(run.stderr, /sudo scripts\/setup-test-machine\.sh/);
});

test('preflight: a missing chromium is named', async (t) => {
  const run = await preflight({ ...process.env, PATH: await pathWith(t, ['bwrap', 'slirp4netns', 'podman', 'fusermount3']), CHROMIUM_PATH: '/nonexistent/chromium' });
  t.is(run.code, 1);
  t.regex(run.stderr, /^npm test: missing chromium \(\/nonexistent\/chromium\); run `sudo scripts\/setup-test-machine\.sh`/);
});

test('preflight: on this (set up) machine it passes silently', async (t) => {
  const run = await preflight(process.env);
  t.is(run.code, 0, run.stderr);
  t.is(run.stdout + run.stderr, '');
  t.log(`${run.ms} ms`);
});
