// Run by `npm install` (in `prepare`): links node_modules/.bin/orch to bin/orch.js, so `npx orch …` in a checkout
// runs this checkout's CLI at once. The package declares no `bin` for that reason: for a package whose own `bin`
// names the command, npm exec installs the package into its npx cache (~/.npm/_npx) before every run and checks
// that install each time — 9-19 s on the first `npx orch` of a fresh clone, ~0.8 s more than `node bin/orch.js` on
// every call after (issue 15). A command found in node_modules/.bin is run as it is. Idempotent; never fails the
// install (without the link, `node bin/orch.js …` does the same).
import { lstat, mkdir, readlink, symlink, unlink } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, 'node_modules', '.bin');
const link = path.join(dir, 'orch');
const target = path.join('..', '..', 'bin', 'orch.js');

try {
  const current = await lstat(link).then((s) => (s.isSymbolicLink() ? readlink(link) : 'not a link'), () => undefined);
  if (current !== target) {
    await mkdir(dir, { recursive: true });
    if (current !== undefined) await unlink(link);
    await symlink(target, link);
  }
} catch (err) {
  process.stderr.write(`[link-bin] node_modules/.bin/orch not linked (${err.message}); run the CLI as node bin/orch.js\n`);
}
