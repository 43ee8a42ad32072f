// k6: signed webhooks into a stimulus route (issue 16). Run against a deployed cluster:
//   k6 run -e ORCH_URL=https://orch.example -e SOURCE=bench -e WEBHOOK_SECRET=... -e VUS=50 bench/k6/webhooks.ts
// The node needs a stimulus route for SOURCE and its secret (ORCH_WEBHOOK_SECRET_<SOURCE>); the twin in the Node
// runner is `npm run bench -- webhooks` (bench/webhooks.ts: same signature, same idempotency key shape).
import http from 'k6/http';
import { check } from 'k6';
import crypto from 'k6/crypto';
import exec from 'k6/execution';
import type { Options } from 'k6/options';

const URL = __ENV.ORCH_URL ?? 'http://127.0.0.1:8080';
const SOURCE = __ENV.SOURCE ?? 'bench';
const SECRET = __ENV.WEBHOOK_SECRET ?? '';
const RUN = `${Date.now()}`;

export const options: Options = {
  vus: Number(__ENV.VUS ?? 50),
  duration: __ENV.DURATION ?? '60s',
  thresholds: {
    checks: ['rate>0.999'],
    http_req_failed: ['rate<0.001'],
    http_req_duration: ['p(99)<250'],
  },
};

export default function (): void {
  const n = exec.scenario.iterationInTest;
  const body = JSON.stringify({ n, event: 'bench', at: Date.now() });
  const res = http.post(`${URL}/v1/webhooks/${SOURCE}`, body, {
    headers: {
      'content-type': 'application/json',
      'x-orch-signature': `sha256=${crypto.hmac('sha256', SECRET, body, 'hex')}`,
      'x-idempotency-key': `${RUN}-${n}`,
    },
  });
  check(res, { accepted: (r) => r.status >= 200 && r.status < 300 });
}
