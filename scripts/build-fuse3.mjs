// Builds orch's libfuse 3 binding (native/fuse3, issue 21) with node-gyp, at `npm install`/`npm ci` (through
// `prepare`) or by hand (`node scripts/build-fuse3.mjs`). Optional, like @cocalc/fuse-native: where libfuse 3's
// headers (Debian's libfuse3-dev, installed by scripts/setup-fuse.sh) or a compiler are missing, it prints one line
// saying so and exits 0, so the install succeeds and the FUSE daemon uses @cocalc/fuse-native (src/fuse/binding.ts).
// Nothing is downloaded: node-gyp is npm's own, and the Node headers are the installed ones (nodedir) when present.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, 'native', 'fuse3');
const say = (line) => process.stderr.write(`orch: ${line}\n`);

function skip(why) {
  say(`the libfuse 3 binding is not built (${why}); FUSE mounts use @cocalc/fuse-native (run scripts/setup-fuse.sh, then npm install)`);
  process.exit(0);
}

if (process.platform !== 'linux') skip('not Linux');
if (spawnSync('pkg-config', ['--exists', 'fuse3']).status !== 0) skip('pkg-config finds no fuse3: libfuse3-dev is not installed');

// npm sets npm_config_node_gyp for lifecycle scripts; by hand, npm's bundled copy next to this node.
const candidates = [
  process.env.npm_config_node_gyp,
  path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
].filter((p) => p && existsSync(p));
const nodeGyp = candidates[0];
if (!nodeGyp) skip('node-gyp was not found');

// The installed headers when there are (Debian's nodejs puts them in /usr/include/node): no download.
const args = [nodeGyp, 'rebuild'];
const prefix = path.resolve(path.dirname(process.execPath), '..');
if (!process.env.npm_config_nodedir && existsSync(path.join(prefix, 'include', 'node', 'node_api.h'))) args.push(`--nodedir=${prefix}`);

const res = spawnSync(process.execPath, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
if (res.status !== 0) {
  const tail = `${res.stdout}\n${res.stderr}`.trim().split('\n').filter((l) => !l.startsWith('gyp info')).slice(-15).join('\n');
  process.stderr.write(`${tail}\n`);
  skip(`node-gyp failed, exit ${res.status}`);
}
say(`built the libfuse 3 binding (${path.relative(root, path.join(dir, 'build', 'Release', 'orch_fuse3.node'))})`);
