#!/usr/bin/env node
// The `orch` bin. Runs the compiled build (dist/, made by `npm install` through `prepare`, or `npm run build`) when it
// is current, else the TypeScript sources through tsx (see bin/entry.js). Either way in this process, no child: a
// signal sent to this process reaches the node itself.
import { buildState, importEntry } from './entry.js';

// Started by npm (`npx orch up`; `npm start` execs this file directly), a shell can sit between npm and this
// process. npm forwards SIGTERM and SIGINT to that shell, which dies without passing them on, and this process
// would be re-parented and keep its ports (issue 15). So under npm it follows its parent: once the parent is gone,
// it stops as on SIGTERM (the graceful shutdown of `orch up`).
if (process.env.npm_lifecycle_event) {
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(watch);
    process.kill(process.pid, 'SIGTERM');
  }, 250);
  watch.unref();
}

const state = buildState();
// Only for a person at a terminal: a stale build is normal while developing, and scripts parse stderr.
if (state.use === 'source' && state.why === 'dist/ is older than src/' && process.stderr.isTTY) {
  process.stderr.write('orch: dist/ is older than src/, running the sources through tsx (`npm run build` to refresh)\n');
}
await importEntry('cli/main', state);
