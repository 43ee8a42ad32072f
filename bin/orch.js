#!/usr/bin/env node
// The `orch` bin: loads the TypeScript sources through tsx in this process (no child process, so a signal sent to
// this process reaches the node itself) so that a clone runs without a build step.
import { register } from 'tsx/esm/api';

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

register();
await import('../src/cli/main.ts');
