// Which code runs: the compiled build in dist/ when it is current, else the TypeScript sources through tsx. Shared by
// bin/orch.js and scripts/prime-pglite-template.mjs.
//
// "Current" means dist/.build-stamp (written by scripts/build.mjs with the time the build STARTED) is at least as new
// as every file under src/: a checkout, a pull or an edit after the build makes dist stale and the sources run
// instead, so what runs is always what src/ says. ORCH_FROM_SOURCE=1 forces the sources.
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The newest modification time under `dir` (ms), or 0 when it does not exist. ~300 stats: a few ms. */
function newestMtime(dir) {
  let newest = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const p = path.join(dir, entry.name);
    const m = entry.isDirectory() ? Math.max(statSync(p).mtimeMs, newestMtime(p)) : statSync(p).mtimeMs;
    if (m > newest) newest = m;
  }
  return newest;
}

/** 'dist' when the compiled build is there and current, else 'source' (with why, for a note to the user). */
export function buildState(env = process.env) {
  if (env.ORCH_FROM_SOURCE === '1') return { use: 'source', why: 'ORCH_FROM_SOURCE=1' };
  const stamp = path.join(ROOT, 'dist', '.build-stamp');
  if (!existsSync(stamp) || !existsSync(path.join(ROOT, 'dist', 'cli', 'main.js'))) return { use: 'source', why: 'no build in dist/' };
  if (newestMtime(path.join(ROOT, 'src')) > statSync(stamp).mtimeMs) return { use: 'source', why: 'dist/ is older than src/' };
  return { use: 'dist' };
}

let tsxRegistered = false;

/**
 * Imports `rel` (a path under src/ without extension, e.g. 'cli/main') from dist/ when current, else from src/
 * through tsx (registered once, in this process: no child process, so signals reach the code that runs).
 */
export async function importEntry(rel, state = buildState()) {
  if (state.use === 'dist') {
    // The bundle of that entry when the build made one (scripts/bundle.mjs: `orch up` loads a few files instead of
    // ~1,600), else dist/ file by file.
    const bundled = path.join(ROOT, 'dist', 'bundle', `${rel}.js`);
    return import(pathToFileURL(existsSync(bundled) ? bundled : path.join(ROOT, 'dist', `${rel}.js`)).href);
  }
  if (!tsxRegistered) {
    const { register } = await import('tsx/esm/api');
    register();
    tsxRegistered = true;
  }
  return import(pathToFileURL(path.join(ROOT, 'src', `${rel}.ts`)).href);
}
