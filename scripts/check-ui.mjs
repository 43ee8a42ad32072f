// `npm run check:ui`: rebuilds the dashboard into a temporary directory and fails when ui/dist (committed, served by
// `npm start` with no build step) differs from it, i.e. when ui/src changed without `npm run build:ui`.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const committed = path.join(root, 'ui/dist');
const fresh = mkdtempSync(path.join(os.tmpdir(), 'orch-ui-check-'));

function files(dir, base = dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? files(p, base) : [path.relative(base, p)];
  });
}

try {
  execFileSync(process.execPath, [path.join(root, 'node_modules/vite/bin/vite.js'), 'build', '--config', path.join(root, 'ui/vite.config.ts')], {
    cwd: root,
    env: { ...process.env, ORCH_UI_OUT_DIR: fresh },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const want = files(fresh).sort();
  const have = (() => {
    try {
      return files(committed).sort();
    } catch {
      return [];
    }
  })();
  const problems = [];
  for (const f of want) {
    if (!have.includes(f)) problems.push(`missing ${f}`);
    else if (!readFileSync(path.join(fresh, f)).equals(readFileSync(path.join(committed, f)))) problems.push(`differs ${f}`);
  }
  for (const f of have) if (!want.includes(f)) problems.push(`extra ${f}`);
  if (problems.length) {
    console.error(`ui/dist is not up to date with ui/src (run npm run build:ui):\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  console.log(`ui/dist is up to date (${want.length} files)`);
} finally {
  rmSync(fresh, { recursive: true, force: true });
}
