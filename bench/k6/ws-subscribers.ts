// k6: WebSocket subscribers of the live feed (GET /v1/ws, docs/LIVE-FEED.md) while workflow runs are started, so
// the subscribed list stream has something to deliver (issue 16). Run against a deployed cluster:
//   k6 run -e ORCH_URL=https://orch.example -e ORCH_TOKEN=... -e WORKFLOW=<deployed workflow> \
//       -e SUBSCRIBERS=1000 -e RUNS_PER_SECOND=20 bench/k6/ws-subscribers.ts
// Scenario `subscribers`: SUBSCRIBERS sockets each subscribe to STREAM (default `workflows`, the tenant's run list)
// and hold for HOLD seconds counting what arrives; `runs`: RUNS_PER_SECOND workflow runs started (each run's
// upserts go to every subscriber). Twin in the Node runner: `npm run bench -- twin ws-subscribers`.
import http from 'k6/http';
import { check } from 'k6';
import { Counter, Rate, Trend } from 'k6/metrics';
import { WebSocket } from 'k6/websockets';
import { setTimeout } from 'k6/timers';
import type { Options } from 'k6/options';

const URL = __ENV.ORCH_URL ?? 'http://127.0.0.1:8080';
const TOKEN = __ENV.ORCH_TOKEN ?? '';
const STREAM = __ENV.STREAM ?? 'workflows';
const WORKFLOW = __ENV.WORKFLOW ?? 'on-hook';
const HOLD = Number(__ENV.HOLD ?? 30);
const SUBSCRIBERS = Number(__ENV.SUBSCRIBERS ?? 200);
const subscribeTime = new Trend('ws_subscribe_time', true);
const subscribed = new Rate('ws_subscribed');
const messages = new Counter('ws_feed_messages');
const dropped = new Counter('ws_closed_by_server');

export const options: Options = {
  scenarios: {
    subscribers: { executor: 'per-vu-iterations', exec: 'subscriber', vus: SUBSCRIBERS, iterations: 1, maxDuration: `${HOLD + 60}s` },
    runs: {
      executor: 'constant-arrival-rate',
      exec: 'run',
      rate: Number(__ENV.RUNS_PER_SECOND ?? 10),
      timeUnit: '1s',
      duration: `${HOLD}s`,
      preAllocatedVUs: 20,
      startTime: '5s',
    },
  },
  thresholds: {
    // The targets: every socket subscribed, p99 from open to the subscription's snapshot under 1 s, no socket closed
    // by the node (a 4008 is a slow consumer, a 4401 an auth failure), the run starts answered.
    ws_subscribed: ['rate>0.999'],
    ws_subscribe_time: ['p(99)<1000'],
    ws_closed_by_server: ['count==0'],
    'http_req_failed{scenario:runs}': ['rate<0.001'],
  },
};

export function subscriber(): void {
  const t0 = Date.now();
  const ws = new WebSocket(`${URL.replace(/^http/, 'ws')}/v1/ws`, null, { headers: { authorization: `Bearer ${TOKEN}` } });
  let joined = false;
  let leaving = false;
  ws.onopen = () => ws.send(JSON.stringify({ subscribe: STREAM }));
  ws.onmessage = (e) => {
    const text = String(e?.data ?? '');
    if (!joined && text.startsWith('{"subscribed"')) {
      joined = true;
      subscribeTime.add(Date.now() - t0);
      return;
    }
    if (joined) messages.add(1);
  };
  ws.onclose = () => {
    subscribed.add(joined);
    if (!leaving) dropped.add(1);
  };
  setTimeout(() => {
    leaving = true;
    ws.close();
  }, HOLD * 1000);
}

export function run(): void {
  const res = http.post(`${URL}/v1/workflows/${WORKFLOW}/run`, JSON.stringify({ input: { n: 1 } }), {
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
  });
  check(res, { 'run started': (r) => r.status === 200 || r.status === 201 || r.status === 202 });
}
