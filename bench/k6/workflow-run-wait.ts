// k6: workflows started and waited for in one request (issue 16, run-and-wait). Run against a deployed cluster:
//   k6 run -e ORCH_URL=https://orch.example -e ORCH_TOKEN=... -e WORKFLOW=race -e VUS=64 bench/k6/workflow-run-wait.ts
// The workflow must be deployed first (bench/workflow-race.ts raceManifest: 10 update_blackboard steps). Its twin
// in the Node runner is `npm run bench -- workflow-race-api` (same request, same shape).
import http from 'k6/http';
import { check } from 'k6';
import type { Options } from 'k6/options';

const URL = __ENV.ORCH_URL ?? 'http://127.0.0.1:8080';
const TOKEN = __ENV.ORCH_TOKEN ?? '';
const WORKFLOW = __ENV.WORKFLOW ?? 'race';

export const options: Options = {
  vus: Number(__ENV.VUS ?? 64),
  duration: __ENV.DURATION ?? '60s',
  thresholds: {
    // The targets: every run ends within the wait (200 completed), p99 of a 10-step workflow under 1 s at c=64.
    checks: ['rate>0.999'],
    http_req_failed: ['rate<0.001'],
    http_req_duration: ['p(99)<1000'],
  },
};

export default function (): void {
  const res = http.post(`${URL}/v1/workflows/${WORKFLOW}/run`, '{}', {
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', prefer: 'wait=60' },
  });
  check(res, {
    'ended within the wait (200)': (r) => r.status === 200,
    completed: (r) => (r.json('status') as string | undefined) === 'completed',
  });
}
