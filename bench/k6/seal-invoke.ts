// k6: SEAL tool calls (POST /v1/seal/invoke) from one attested session (issue 16, docs/SEAL.md).
//
// k6 cannot sign SEAL envelopes: its WebCrypto (`crypto.subtle.sign`) offers ECDSA, HMAC, RSASSA-PKCS1-v1_5 and
// RSA-PSS, not Ed25519, and k6/crypto has hashes and HMAC only. So the envelopes are signed beforehand by
// `tsx bench/seal-envelopes.ts` (attests for a running execution, signs COUNT distinct tools/call payloads with the
// session's key, writes {security_token, envelopes: [{payload, signature}]}) and k6 only sends them. That is sound
// for the protocol: the signature covers the payload only, the timestamp (±30 s) is set at send time, and each
// signature is accepted once per session, so each envelope is sent exactly once (shared-iterations over the file).
//   tsx bench/seal-envelopes.ts --url https://orch.example --execution <id> --agent <agent id> \
//       --container <proof> --count 100000 > /tmp/envelopes.json
//   k6 run -e ORCH_URL=https://orch.example -e ENVELOPES=/tmp/envelopes.json -e VUS=16 bench/k6/seal-invoke.ts
// Signing is the agent's cost, not the orchestrator's, so what k6 measures is the node's side alone (as the Node
// twin does: `npm run bench -- twin seal-invoke`).
import http from 'k6/http';
import { check } from 'k6';
import { SharedArray } from 'k6/data';
import exec from 'k6/execution';
import type { Options } from 'k6/options';

interface Signed {
  payload: string;
  signature: string;
}

const URL = __ENV.ORCH_URL ?? 'http://127.0.0.1:8080';
const FILE = __ENV.ENVELOPES ?? 'envelopes.json';
const file = JSON.parse(open(FILE)) as { security_token: string; envelopes: Signed[] };
const TOKEN = file.security_token;
const envelopes = new SharedArray<Signed>('envelopes', () => file.envelopes);

export const options: Options = {
  scenarios: {
    invoke: {
      executor: 'shared-iterations',
      vus: Number(__ENV.VUS ?? 16),
      // Each envelope once: a second use of a signature is refused (401) by design.
      iterations: Number(__ENV.ITERATIONS ?? envelopes.length),
      maxDuration: __ENV.DURATION ?? '120s',
    },
  },
  thresholds: {
    // The targets (docs/SEAL.md): every call answered 200 with a result; p99 of one invoke over HTTP under 50 ms.
    checks: ['rate>0.999'],
    http_req_failed: ['rate<0.001'],
    http_req_duration: ['p(99)<50'],
  },
};

export default function (): void {
  const e = envelopes[exec.scenario.iterationInTest % envelopes.length];
  if (!e) return;
  const body = JSON.stringify({ protocol: 'seal/v1', security_token: TOKEN, payload: e.payload, signature: e.signature, timestamp: new Date().toISOString() });
  const res = http.post(`${URL}/v1/seal/invoke`, body, { headers: { 'content-type': 'application/json' } });
  check(res, { 'tool answered (200, no isError)': (r) => r.status === 200 && r.json('result.isError') === false });
}
