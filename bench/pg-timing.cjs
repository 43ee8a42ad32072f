// Preload for the race breakdown (bench/race-breakdown.ts): timestamps every statement the node sends through `pg`
// (from Client.query's call to its answer) and every HTTP request (from the request event to the response's
// 'finish'), so the bench can split one workflow's wall time into time inside statements and time in the node.
//   NODE_OPTIONS='--require ./bench/pg-timing.cjs' PG_TIMING=/tmp/timing.json
// Recording starts at the first SIGUSR2 and the records are written to PG_TIMING at the second (the load window).
// Times are epoch milliseconds (performance.timeOrigin + performance.now()), comparable across processes.
'use strict';
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { performance } = require('node:perf_hooks');

const file = process.env.PG_TIMING || `pg-timing-${process.pid}.json`;
const now = () => performance.timeOrigin + performance.now();
let recording = false;
const statements = [];
const requests = [];

// The node's own `pg` (the one dist/ imports), resolved from the working directory, not from this file.
const pg = require(require.resolve('pg', { paths: [process.cwd(), path.join(__dirname, '..')] }));
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function timedQuery(...args) {
  if (!recording) return query.apply(this, args);
  const first = args[0];
  const name = typeof first === 'string' ? first.replace(/\s+/g, ' ').slice(0, 60) : first && (first.name || String(first.text).replace(/\s+/g, ' ').slice(0, 60));
  const rec = { name, start: now(), end: 0 };
  statements.push(rec);
  const cb = args.findIndex((a) => typeof a === 'function');
  if (cb >= 0) {
    const done = args[cb];
    args[cb] = function (...r) {
      rec.end = now();
      return done.apply(this, r);
    };
    return query.apply(this, args);
  }
  const out = query.apply(this, args);
  if (out && typeof out.then === 'function') out.then(() => (rec.end = now()), () => (rec.end = now()));
  return out;
};

const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function timedEmit(event, req, res) {
  if (recording && event === 'request' && res) {
    const rec = { url: req.url, start: now(), end: 0 };
    requests.push(rec);
    res.once('finish', () => (rec.end = now()));
  }
  return emit.apply(this, arguments);
};

process.on('SIGUSR2', () => {
  if (!recording) {
    recording = true;
    return;
  }
  recording = false;
  fs.writeFileSync(file, JSON.stringify({ statements, requests }));
});
