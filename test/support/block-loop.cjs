// Preload for tests that need a node's main event loop busy (NODE_OPTIONS='--require .../block-loop.cjs'): on
// SIGUSR2 the main thread spins synchronously for the number of milliseconds written in BLOCK_LOOP_FILE — what a long
// synchronous call, a burst of synchronous work or a wedged loop looks like from outside. Only the main thread spins;
// worker threads keep their own loops.
'use strict';
const fs = require('node:fs');

process.on('SIGUSR2', () => {
  const ms = Number(fs.readFileSync(process.env.BLOCK_LOOP_FILE, 'utf8').trim());
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // spin
  }
});
