// Issue 15 item 4: `npx orch …` is how the README runs the CLI in a checkout. While the package declared its own
// `bin`, npm exec installed the checkout into its npx cache (~/.npm/_npx) before running it, and checked that install
// on every call: 9-19 s for the first `npx orch` of a fresh clone, ~0.8 s more than `node bin/orch.js` after. Now
// `npm install` links node_modules/.bin/orch (scripts/link-bin.mjs) and npm exec runs it as it is. Each check below
// uses an npm cache of its own, as a fresh machine has.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('npm install links node_modules/.bin/orch to bin/orch.js', (t) => {
  t.is(readlinkSync(path.join(ROOT, 'node_modules', '.bin', 'orch')), path.join('..', '..', 'bin', 'orch.js'));
});

test('`npx orch` runs the checkout CLI without installing the checkout into npm\'s npx cache', async (t) => {
  const cache = await mkdtemp(path.join(os.tmpdir(), 'orch-npx-cache-'));
  t.teardown(() => rm(cache, { recursive: true, force: true }));
  const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const res = spawnSync('npx', ['--no-install', 'orch', '--version'], {
    cwd: ROOT,
    env: { ...process.env, npm_config_cache: cache, npm_config_update_notifier: 'false' },
    encoding: 'utf8',
    timeout: 120_000,
  });
  t.is(res.status, 0, res.stderr);
  t.is(res.stdout.trim(), version);
  t.false(existsSync(path.join(cache, '_npx')), 'npm exec installed the checkout into its npx cache');
});
