// Issue 14 finding 9 (and 10's second half), replayed against a real in-process node on PostgreSQL: bad input is a
// clear 4xx (gRPC INVALID_ARGUMENT), never a 500/INTERNAL. NUL bytes in manifests, run inputs, stimulus content,
// headers and idempotency keys, webhook bodies, approval feedback and path parameters; out-of-range and non-decimal
// integer query parameters; a uint64 offset of 2^64-1 in FSAL Read; MCP tools/call without a name.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { credentials, Metadata, status, type MethodDefinition } from '@grpc/grpc-js';
import { startTestNode, type TestNode } from '../support/in-process-node.ts';
import { signWebhook, webhookSecretVariable } from '../../src/stimuli/signature.ts';
import { OrchRuntimeClient, OrchRuntimeService } from '../../src/gen/orch/runtime/v1/runtime.js';
import { FsalServiceClient, FsalServiceService } from '../../src/gen/orch/fsal/v1/fsal.js';
import { call } from '../grpc/helpers.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
let n: TestNode;
let token: string;
const SOURCE = `bnd${randomUUID().slice(0, 6)}`;
const SECRET = 'bounds-webhook-secret';

export const AGENT = (name: string, description = 'a test agent'): string => `apiVersion: orch.dev/v1
kind: Agent
metadata:
  name: ${name}
  version: 1.0.0
  description: ${JSON.stringify(description)}
spec:
  runtime: { language: node, version: "20" }
  task: { instruction: say hi }
`;

test.before(async () => {
  // The webhook route reads its secret per request from the environment (the edge's own).
  process.env[webhookSecretVariable(SOURCE)] = SECRET;
  n = await startTestNode((fn) => void cleanups.push(fn), { name: 'bounds', extraYaml: '  cortex: {}\n' });
  token = await n.token('bounds-tenant', 'tenant-admin');
});

test.after.always(async () => {
  delete process.env[webhookSecretVariable(SOURCE)];
  for (const fn of cleanups.reverse()) await fn();
});

async function raw(method: string, url: string, body: string | Buffer | undefined, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${n.http}${url}`, { method, headers: { authorization: `Bearer ${token}`, ...headers }, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    parsed = { text };
  }
  return { status: res.status, body: parsed };
}

test('NUL bytes in manifests, inputs, stimuli, webhooks, approvals and path parameters are 4xx naming the field', async (t) => {
  const name = `nul-${randomUUID().slice(0, 6)}`;
  // A manifest whose description holds a NUL (YAML's "\0" escape) was a 500 from the database.
  const yamlNul = await raw('POST', '/v1/agents', AGENT(name, 'a\0b'), { 'content-type': 'application/yaml' });
  t.is(yamlNul.status, 422, JSON.stringify(yamlNul.body));
  t.regex(JSON.stringify(yamlNul.body), /metadata\.description.*NUL/);
  const jsonNul = await n.api('POST', '/v1/agents', { manifest_yaml: AGENT(name).replace('a test agent', 'a\u0000b') }, token);
  t.is(jsonNul.status, 400, JSON.stringify(jsonNul.body));
  t.regex(String(jsonNul.body.error), /body\.manifest_yaml must not contain NUL/);

  const ok = await n.api<{ agent_id: string }>('POST', '/v1/agents', { manifest_yaml: AGENT(name) }, token);
  t.is(ok.status, 201, JSON.stringify(ok.body));
  const run = await n.api('POST', `/v1/agents/${ok.body.agent_id}/execute`, { input: 'x\u0000y' }, token);
  t.is(run.status, 400, JSON.stringify(run.body));
  t.regex(String(run.body.error), /body\.input must not contain NUL/);

  const wf = await raw('POST', '/v1/workflows', `apiVersion: orch.dev/v1\nkind: Workflow\nmetadata: { name: ${name}, version: 1.0.0, description: "a\\0b" }\nspec:\n  initial_state: a\n  states:\n    a: { kind: System, command: 'true', transitions: [] }\n`, { 'content-type': 'application/yaml' });
  t.is(wf.status, 422, JSON.stringify(wf.body));

  for (const body of [
    { source: SOURCE, content: 'a\u0000b' },
    { source: SOURCE, content: '{"title":"a\\u0000b"}' },
    { source: SOURCE, content: 'x', headers: { 'x-a': 'a\u0000b' } },
    { source: SOURCE, content: 'x', idempotency_key: 'k\u0000' },
  ]) {
    const r = await n.api('POST', '/v1/stimuli', body, token);
    t.is(r.status, 400, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
  }

  for (const payload of [Buffer.from('{"title":"a\u0000b"}'), Buffer.from('{"title":"a\\u0000b"}')]) {
    const r = await raw('POST', `/v1/webhooks/${SOURCE}`, payload, { 'content-type': 'application/json', 'x-orch-signature': signWebhook(SECRET, payload) });
    t.is(r.status, 400, JSON.stringify(r.body));
  }

  const approval = await n.api('POST', `/v1/human-approvals/${randomUUID()}/approve`, { feedback: 'ok\u0000' }, token);
  t.is(approval.status, 400, JSON.stringify(approval.body));

  const param = await raw('GET', '/v1/agents/a%00b', undefined);
  t.is(param.status, 400, JSON.stringify(param.body));
  t.regex(String(param.body.error), /path parameter id must not contain NUL/);
  const query = await raw('GET', '/v1/stimuli?source=a%00b', undefined);
  t.is(query.status, 400, JSON.stringify(query.body));
});

test('integer query parameters are decimal digits within range: 1e20, 2^63, 0x10 and limit=201 are 400', async (t) => {
  for (const url of [
    '/v1/executions?offset=1e20',
    '/v1/executions?offset=9223372036854775808',
    '/v1/executions/00000000-0000-0000-0000-000000000000/logs?offset=1e20',
    '/v1/workflows/executions?offset=9223372036854775808',
    '/v1/stimuli?offset=1e20',
    '/v1/stimuli?limit=201',
    '/v1/stimuli?limit=0x10',
    '/v1/stimuli?limit=0',
    '/v1/stimuli?limit=-1',
    '/v1/volumes?offset=99999999999999999999',
  ]) {
    const r = await raw('GET', url, undefined);
    t.is(r.status, 400, `${url} → ${r.status} ${JSON.stringify(r.body)}`);
    t.regex(String(r.body.error), /must be an integer from/, url);
  }
  for (const url of ['/v1/stimuli?limit=200&offset=0', '/v1/executions?limit=1000', '/v1/volumes?limit=1000']) {
    t.is((await raw('GET', url, undefined)).status, 200, url);
  }
});

test('gRPC: NUL in IngestStimulus and StoreCortexPattern, and FSAL Read at offset 2^64-1, are INVALID_ARGUMENT', async (t) => {
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  const runtime = new OrchRuntimeClient(n.node.addresses.grpc, credentials.createInsecure());
  t.teardown(() => runtime.close());
  const ingest = await call(runtime, OrchRuntimeService.ingestStimulus, { source_name: SOURCE, content: 'a\u0000b', headers: {} }, md);
  t.is(ingest.code, status.INVALID_ARGUMENT, ingest.details);
  t.regex(ingest.details, /request\.content must not contain NUL/);
  const cortex = await call(
    runtime,
    OrchRuntimeService.storeCortexPattern,
    { error_signature: 'sig\u0000', error_type: 't', error_message: 'm', solution_approach: 'a', tags: [] },
    md,
  );
  t.is(cortex.code, status.INVALID_ARGUMENT, cortex.details);

  const fsal = new FsalServiceClient(n.node.addresses.grpc, credentials.createInsecure());
  t.teardown(() => fsal.close());
  // The generated encoder cannot write 2^64-1 from a JS number: hand-encode ReadRequest {path: "/x", offset: 2^64-1}.
  const bytes = Buffer.concat([Buffer.from([0x1a, 0x02]), Buffer.from('/x'), Buffer.from([0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])]);
  const read: MethodDefinition<unknown, unknown> = { ...FsalServiceService.read, requestSerialize: () => bytes } as MethodDefinition<unknown, unknown>;
  const r = await call(fsal, read, {}, md);
  t.is(r.code, status.INVALID_ARGUMENT, r.details);
  t.regex(r.details, /could not be decoded/);
});

test('MCP tools/call without a name is -32602 with a clean message, not -32603 with a validation dump', async (t) => {
  const res = await fetch(`${n.http}/v1/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { arguments: {} } }),
  });
  const body = (await res.json()) as { id: number; error?: { code: number; message: string } };
  t.is(body.id, 7);
  t.is(body.error?.code, -32602, JSON.stringify(body));
  t.regex(body.error?.message ?? '', /^invalid params for tools\/call: params\.name: /);
  t.false((body.error?.message ?? '').includes('"code"'), 'no raw validator dump');
});
