// The liveness thread's code: plain JavaScript run with `eval: true`, so no TypeScript loader is needed in the worker
// (from dist/ or through tsx alike). It has its own event loop and its own V8 heap, so nothing the main thread does —
// a burst of requests, a long synchronous call, a main-heap GC — delays its answer.
//
// The main thread bumps beats[0] every `beatMs`; this thread samples it every `beatMs / 2` on its own clock
// (monotonic: a wall-clock jump never makes a wedged loop look alive). GET /health/live answers 200 while the main
// loop's last beat is at most `stallMs` old and 503 after that, so a loop that is truly stuck (an endless loop, a
// deadlock in a native call) reads as not live and an orchestrator restarts the node, while one that is merely busy
// for less than the bound is never killed.
export const LIVENESS_WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { beatsBuffer, beatMs, stallMs, host, port } = workerData;
const beats = new Int32Array(beatsBuffer);
const nowMs = () => Number(process.hrtime.bigint() / 1000000n);
let seen = Atomics.load(beats, 0);
let movedAt = nowMs();
function sample() {
  const count = Atomics.load(beats, 0);
  if (count !== seen) {
    seen = count;
    movedAt = nowMs();
  }
  return nowMs() - movedAt;
}
setInterval(sample, Math.max(5, Math.floor(beatMs / 2)));
function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}
const server = http.createServer((req, res) => {
  const url = (req.url || '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { error: 'only GET is served on the health port' });
  if (url !== '/health/live' && url !== '/health') return send(res, 404, { error: 'the health port serves only GET /health/live (and /health); everything else is on the HTTP port' });
  const silent = sample();
  if (silent > stallMs) {
    return send(res, 503, { status: 'not live', error: 'the main event loop has not turned for ' + silent + ' ms (limit ' + stallMs + ' ms)', main_loop_silent_ms: silent });
  }
  send(res, 200, { status: 'ok', main_loop_silent_ms: silent });
});
// A probe that never finishes its request must not hold a socket for ever.
server.requestTimeout = 10000;
server.headersTimeout = 10000;
server.keepAliveTimeout = 5000;
server.on('error', (err) => parentPort.postMessage({ type: 'error', message: err.message, code: err.code }));
server.listen({ host, port }, () => parentPort.postMessage({ type: 'listening', port: server.address().port }));
parentPort.on('message', (m) => {
  if (m === 'close') {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
`;
