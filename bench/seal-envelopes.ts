// SEAL envelopes signed ahead of the load (issue 16): k6 cannot sign Ed25519 (bench/k6/seal-invoke.ts says why), so
// this attests one session for a running execution and signs `count` distinct tools/call payloads with its key.
// The signature covers the payload only; the sender sets the timestamp when it sends, and sends each envelope once
// (a signature is accepted once per session). Used by the k6 script (as a file) and by the Node twin and the
// capacity bench (in memory), so all three send the same bytes.
//   tsx bench/seal-envelopes.ts --url URL --execution ID --agent ID --container PROOF [--count N] [--tool NAME] > envelopes.json
// PROOF is what the execution's sandbox would present (docs/SEAL.md §1): under docker isolation the container id
// (GET /v1/executions/{id} shows it), under process isolation ORCH_SEAL_CONTAINER_ID inside the sandbox.
import { attestHttp, generateKeyPair, signPayload, toolCallPayload, type AttestParams } from '../src/seal/client.ts';

export interface SignedEnvelopes {
  security_token: string;
  /** payload: base64 of the JSON-RPC bytes; signature: canonical base64 of the Ed25519 signature over them. */
  envelopes: { payload: string; signature: string }[];
}

export async function signEnvelopes(baseUrl: string, p: AttestParams, count: number, tool = 'orch.tools.list'): Promise<SignedEnvelopes> {
  const keys = generateKeyPair();
  const att = await attestHttp(baseUrl, keys, p);
  const envelopes = Array.from({ length: count }, (_, i) => {
    const e = signPayload(toolCallPayload(tool, {}, i + 1), { securityToken: att.security_token, privateKey: keys.privateKey });
    return { payload: e.payload.toString('base64'), signature: e.signature };
  });
  return { security_token: att.security_token, envelopes };
}

/** The JSON body of POST /v1/seal/invoke for one presigned envelope, stamped now. */
export function invokeBody(token: string, e: { payload: string; signature: string }): string {
  return JSON.stringify({ protocol: 'seal/v1', security_token: token, payload: e.payload, signature: e.signature, timestamp: new Date().toISOString() });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const opt = (name: string): string | undefined => {
    const i = process.argv.indexOf(`--${name}`);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const url = opt('url');
  const executionId = opt('execution');
  const agentId = opt('agent');
  const containerId = opt('container');
  if (!url || !executionId || !agentId || !containerId) {
    process.stderr.write('usage: tsx bench/seal-envelopes.ts --url URL --execution ID --agent ID --container PROOF [--count N] [--tool NAME]\n');
    process.exit(2);
  }
  const signed = await signEnvelopes(url, { executionId, agentId, containerId }, Number(opt('count') ?? 10_000), opt('tool'));
  process.stdout.write(JSON.stringify(signed));
}
