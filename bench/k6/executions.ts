// k6: agent executions started and followed to their end (issue 16). Run against a deployed cluster:
//   k6 run -e ORCH_URL=https://orch.example -e ORCH_TOKEN=... -e AGENT_ID=<id> -e VUS=8 bench/k6/executions.ts
// AGENT_ID names a deployed one-shot agent (docs/BENCHMARKS.md has the manifest the twin uses: `trivial`, process
// isolation, one model call). Each iteration is POST /v1/executions, then GET /v1/executions/{id}/stream, which
// the node ends after the terminal event: the iteration's time is start → end of one execution (sandbox start, one
// model call, the terminal event written). Twin in the Node runner: `npm run bench -- twin executions`.
import http from 'k6/http';
import { check } from 'k6';
import { Trend } from 'k6/metrics';
import type { Options } from 'k6/options';

const URL = __ENV.ORCH_URL ?? 'http://127.0.0.1:8080';
const TOKEN = __ENV.ORCH_TOKEN ?? '';
const AGENT_ID = __ENV.AGENT_ID ?? '';
const endToEnd = new Trend('execution_end_to_end', true);

export const options: Options = {
  vus: Number(__ENV.VUS ?? 8),
  duration: __ENV.DURATION ?? '60s',
  thresholds: {
    // The targets: every execution ends completed; start → end p99 under 5 s with process sandboxes; the start call
    // itself (a row written, the sandbox requested) p99 under 250 ms.
    checks: ['rate>0.999'],
    http_req_failed: ['rate<0.001'],
    execution_end_to_end: ['p(99)<5000'],
    'http_req_duration{call:start}': ['p(99)<250'],
  },
};

export default function (): void {
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const t0 = Date.now();
  const started = http.post(`${URL}/v1/executions`, JSON.stringify({ agent_id: AGENT_ID, input: 'go' }), { headers, tags: { call: 'start' } });
  const id = started.json('execution_id') as string | undefined;
  if (!check(started, { 'started (200)': (r) => r.status === 200 && typeof id === 'string' })) return;
  // The SSE stream ends after the terminal event, so one blocking GET waits for the execution's end.
  const stream = http.get(`${URL}/v1/executions/${id}/stream`, { headers: { authorization: `Bearer ${TOKEN}` }, timeout: '120s', tags: { call: 'stream' } });
  endToEnd.add(Date.now() - t0);
  check(stream, { 'ended completed': (r) => r.status === 200 && String(r.body).includes('event: execution_completed') });
}
