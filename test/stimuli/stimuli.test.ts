// Stimuli on a real node over PostgreSQL (seed 000, CONTRACT.md): every row of the POST /v1/stimuli and
// POST /v1/webhooks/{source} error tables, the IngestStimulus status codes, direct routes with input templates,
// the router agent (scripted LLM server), idempotency (also for a delivery that failed to route), 200 concurrent
// deliveries with one key starting exactly one workflow (counted in the database), and tenant-scoped list/get.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { signWebhook, webhookSecretVariable } from '../../src/stimuli/signature.ts';
import { startScriptedLlm, lastMessage, textReply, type ScriptedLlm } from '../support/scripted-llm.ts';
import { eventually, startHarness, workflowYaml, type Harness } from './harness.ts';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
const defer = (fn: () => Promise<unknown> | unknown): void => void cleanups.push(fn);
test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const SECRET = 'github-shared-secret';
process.env[webhookSecretVariable('github')] = SECRET;
process.env[webhookSecretVariable('mail-in')] = 'mail-secret';

const STIMULI = `  stimuli:
    routes:
      - { source: github, workflow: on-push, input_template: '{"repo": "{{content.repository}}", "event": "{{headers.x-github-event}}"}' }
      - { source: strict-src, workflow: strict }
      - { source: missing-src, workflow: not-deployed }
    router_agent: router
    classification_threshold: 0.7
`;

let llm: ScriptedLlm;
let h: Harness;
let plain: Harness; // a node of the same database with no spec.stimuli: neither routes nor a router agent
let guarded: Harness; // a node of the same database whose stimuli need the operator role (spec.stimuli.ingest_roles)

test.before(async () => {
  // The router agent: "ambiguous" content gets a low confidence, "elsewhere" a workflow that is not deployed.
  llm = await startScriptedLlm((body) => {
    const text = String(lastMessage(body)?.content ?? '');
    if (text.includes('ambiguous')) return textReply('{"workflow": "on-push", "confidence": 0.3}');
    if (text.includes('elsewhere')) return textReply('{"workflow": "no-such-flow", "confidence": 0.95}');
    return textReply('```json\n{"workflow": "on-push", "confidence": 0.9}\n```');
  });
  defer(() => llm.close());
  h = await startHarness(defer, STIMULI, { llmUrl: llm.url });
  plain = await startHarness(defer, '', { db: h.db });
  guarded = await startHarness(defer, STIMULI + '    ingest_roles: [operator]\n', { db: h.db, llmUrl: llm.url });
  for (const tenant of ['orch-system', 'acme']) {
    await h.deployWorkflow(tenant, workflowYaml('on-push'));
    await h.deployWorkflow(tenant, workflowYaml('strict', '  input_schema: { type: object, required: [who], properties: { who: { type: string } } }\n'));
    await h.deployRouter(tenant);
  }
});

async function webhook(source: string, body: string | Buffer, headers: Record<string, string>, base = h.http): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}/v1/webhooks/${source}`, { method: 'POST', headers, body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function executionRow(id: string): Promise<Record<string, unknown> | undefined> {
  const r = await h.node.db.query('SELECT * FROM workflow_executions WHERE id = $1', [id]);
  return r.rows[0];
}

test('POST /v1/stimuli: a direct route renders its input_template and starts the workflow', async (t) => {
  const res = await h.api('POST', '/v1/stimuli', {
    body: { source: 'github', content: JSON.stringify({ repository: 'orch/core' }), headers: { 'X-GitHub-Event': 'push' } },
  });
  t.is(res.status, 200);
  const { stimulus_id, workflow_execution_id } = res.body as { stimulus_id: string; workflow_execution_id: string };
  t.regex(stimulus_id, /^[0-9a-f-]{36}$/);
  const row = await eventually(async () => {
    const r = await executionRow(workflow_execution_id);
    return r?.status === 'completed' ? r : undefined;
  });
  t.deepEqual(row.input, { repo: 'orch/core', event: 'push' });
  t.is((row.blackboard as Record<string, unknown>).seen, 'orch/core');
  const got = await h.api('GET', `/v1/stimuli/${stimulus_id}`);
  t.like(got.body, { stimulus_id, status: 'routed', routed_by: 'route', workflow_name: 'on-push', workflow_execution_id, source: 'github' });
});

test('POST /v1/stimuli: 401 without a bearer, 400 without source or content (nothing written)', async (t) => {
  t.is((await h.api('POST', '/v1/stimuli', { body: { source: 'github', content: 'x' }, token: '' })).status, 401);
  const token = await h.token('quiet');
  const noSource = await h.api('POST', '/v1/stimuli', { body: { content: 'x' }, token });
  t.is(noSource.status, 400);
  t.regex(String(noSource.body.error), /source/);
  const noContent = await h.api('POST', '/v1/stimuli', { body: { source: 'github' }, token });
  t.is(noContent.status, 400);
  t.regex(String(noContent.body.error), /content/);
  t.is((await h.api('POST', '/v1/stimuli', { body: { source: 'bad source!', content: 'x' }, token })).status, 400);
  t.is((await h.api('POST', '/v1/stimuli', { body: { source: 'github', content: 'x', idempotency_key: 7 }, token })).status, 400);
  t.is((await h.api('POST', '/v1/stimuli', { body: { source: 'github', content: 'x', headers: { a: 1 } }, token })).status, 400);
  const written = await h.node.db.query("SELECT count(*)::int AS n FROM stimuli WHERE tenant_id = 'quiet'");
  t.deepEqual(written.rows, [{ n: 0 }]);
});

test('POST /v1/stimuli: 409 idempotent_duplicate with the original id; the key is scoped to the source', async (t) => {
  const key = randomUUID();
  const first = await h.api('POST', '/v1/stimuli', { body: { source: 'github', content: '{"repository":"a/b"}', idempotency_key: key } });
  t.is(first.status, 200);
  const dup = await h.api('POST', '/v1/stimuli', { body: { source: 'github', content: '{"repository":"a/b"}', idempotency_key: key } });
  t.is(dup.status, 409);
  t.deepEqual(dup.body, { error: 'idempotent_duplicate', details: { stimulus_id: first.body.stimulus_id } });
  const otherSource = await h.api('POST', '/v1/stimuli', { body: { source: 'mail', content: 'please deploy', idempotency_key: key } });
  t.is(otherSource.status, 200);
  // The same key in another tenant is another key.
  const acme = await h.api('POST', '/v1/stimuli', { body: { source: 'github', content: '{"repository":"a/b"}', idempotency_key: key }, token: await h.token('acme') });
  t.is(acme.status, 200);
});

test('POST /v1/stimuli: an expired key no longer blocks', async (t) => {
  const key = randomUUID();
  const first = await h.api('POST', '/v1/stimuli', { body: { source: 'github', content: '{}', idempotency_key: key } });
  t.is(first.status, 200);
  // 24 h later (the claim's expiry moved into the past rather than waiting a day).
  await h.node.db.query("UPDATE stimulus_keys SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1", [key]);
  const again = await h.api('POST', '/v1/stimuli', { body: { source: 'github', content: '{}', idempotency_key: key } });
  t.is(again.status, 200);
  t.not(again.body.stimulus_id, first.body.stimulus_id);
  const dup = await h.api('POST', '/v1/stimuli', { body: { source: 'github', content: '{}', idempotency_key: key } });
  t.is(dup.status, 409);
  t.is((dup.body.details as { stimulus_id: string }).stimulus_id, String(again.body.stimulus_id));
});

test('POST /v1/stimuli: the router agent classifies into a deployed workflow', async (t) => {
  const res = await h.api('POST', '/v1/stimuli', { body: { source: 'support-mail', content: 'The build is broken, please redeploy' } });
  t.is(res.status, 200);
  const got = await h.api('GET', `/v1/stimuli/${String(res.body.stimulus_id)}`);
  t.like(got.body, { status: 'routed', routed_by: 'router_agent', workflow_name: 'on-push', confidence: 0.9 });
  const row = await executionRow(String(res.body.workflow_execution_id));
  t.like(row?.input, { source: 'support-mail', content: 'The build is broken, please redeploy' });
  const asked = llm.requests.find((r) => String(lastMessage(r)?.content ?? '').includes('please redeploy'));
  t.truthy(asked);
  t.regex(String(asked?.messages[0]?.content), /on-push/);
});

test('POST /v1/stimuli: 422 classification_failed below the threshold or for an undeployed choice; a retry is still a duplicate', async (t) => {
  const key = randomUUID();
  const low = await h.api('POST', '/v1/stimuli', { body: { source: 'support-mail', content: 'ambiguous request', idempotency_key: key } });
  t.is(low.status, 422);
  t.is(low.body.error, 'classification_failed');
  const id = (low.body.details as { stimulus_id: string }).stimulus_id;
  const got = await h.api('GET', `/v1/stimuli/${id}`);
  t.like(got.body, { status: 'classification_failed', workflow_execution_id: null });
  t.regex(String(got.body.error), /0\.3 is below the threshold 0\.7/);
  // CONTRACT.md: the delivery was recorded and its key taken before routing.
  const retry = await h.api('POST', '/v1/stimuli', { body: { source: 'support-mail', content: 'ambiguous request', idempotency_key: key } });
  t.is(retry.status, 409);
  t.is(retry.body.error, 'idempotent_duplicate');
  const elsewhere = await h.api('POST', '/v1/stimuli', { body: { source: 'support-mail', content: 'send this elsewhere' } });
  t.is(elsewhere.status, 422);
  t.is(elsewhere.body.error, 'classification_failed');
});

test('POST /v1/stimuli: 422 no_router_configured without a route or a router agent', async (t) => {
  const res = await plain.api('POST', '/v1/stimuli', { body: { source: 'github', content: '{}' } });
  t.is(res.status, 422);
  t.is(res.body.error, 'no_router_configured');
});

test('POST /v1/stimuli: 500 workflow_error when the workflow does not start (not deployed, input schema)', async (t) => {
  const missing = await h.api('POST', '/v1/stimuli', { body: { source: 'missing-src', content: '{}' } });
  t.is(missing.status, 500);
  t.is(missing.body.error, 'workflow_error');
  const strict = await h.api('POST', '/v1/stimuli', { body: { source: 'strict-src', content: 'no who here' } });
  t.is(strict.status, 500);
  t.is(strict.body.error, 'workflow_error');
  const got = await h.api('GET', `/v1/stimuli/${(strict.body.details as { stimulus_id: string }).stimulus_id}`);
  t.like(got.body, { status: 'workflow_error', workflow_name: 'strict', workflow_execution_id: null });
  t.regex(String(got.body.error), /input_schema/);
});

test('webhooks: the signature rows (401 missing/secret/invalid, 400 malformed), no bearer needed', async (t) => {
  const body = '{"repository": "hooks/one"}';
  const missing = await webhook('github', body, { 'content-type': 'application/json' });
  t.is(missing.status, 401);
  t.deepEqual(missing.body, { error: 'missing_signature' });
  for (const bad of ['sha256=zz', 'md5=abc', 'sha256=' + 'a'.repeat(63), 'deadbeef']) {
    const malformed = await webhook('github', body, { 'x-orch-signature': bad });
    t.is(malformed.status, 400, bad);
    t.deepEqual(malformed.body, { error: 'malformed_signature' });
  }
  const noSecret = await webhook('gitlab', body, { 'x-orch-signature': signWebhook('whatever', body) });
  t.is(noSecret.status, 401);
  t.deepEqual(noSecret.body, { error: 'secret_not_found' });
  const wrong = await webhook('github', body, { 'x-orch-signature': signWebhook('not-the-secret', body) });
  t.is(wrong.status, 401);
  t.deepEqual(wrong.body, { error: 'invalid_signature' });
  // A valid signature over other bytes (one byte of the body changed) is invalid too.
  const tampered = await webhook('github', body.replace('one', 'two'), { 'x-orch-signature': signWebhook(SECRET, body) });
  t.is(tampered.status, 401);
  t.deepEqual(tampered.body, { error: 'invalid_signature' });
});

test('webhooks: verified raw bytes of any content type are the content; X-Idempotency-Key deduplicates (409)', async (t) => {
  const body = '{"repository":  "hooks/raw" }';
  const key = randomUUID();
  for (const type of ['application/json', 'text/plain', 'application/octet-stream', 'application/x-www-form-urlencoded']) {
    const k = `${key}-${type}`;
    const ok = await webhook('github', body, { 'content-type': type, 'x-orch-signature': signWebhook(SECRET, body), 'x-idempotency-key': k, 'x-github-event': 'push' });
    t.is(ok.status, 200, type);
    const got = await h.api('GET', `/v1/stimuli/${String(ok.body.stimulus_id)}`);
    t.like(got.body, { content: body, source: 'github', idempotency_key: k, status: 'routed', tenant_id: 'orch-system' });
    t.is((got.body.headers as Record<string, string>)['content-type'], type);
    const row = await executionRow(String(ok.body.workflow_execution_id));
    t.deepEqual(row?.input, { repo: 'hooks/raw', event: 'push' });
    const dup = await webhook('github', body, { 'content-type': type, 'x-orch-signature': signWebhook(SECRET, body), 'x-idempotency-key': k });
    t.is(dup.status, 409);
    t.deepEqual(dup.body, { error: 'idempotent_duplicate', details: { stimulus_id: ok.body.stimulus_id } });
  }
  // Without a content type and with an empty body.
  const empty = await fetch(`${h.http}/v1/webhooks/github`, { method: 'POST', headers: { 'x-orch-signature': signWebhook(SECRET, '') } });
  t.is(empty.status, 200);
});

test('webhooks: 422 classification_failed and no_router_configured', async (t) => {
  const body = 'ambiguous mail';
  const low = await webhook('mail-in', body, { 'x-orch-signature': signWebhook('mail-secret', body) });
  t.is(low.status, 422);
  t.is(low.body.error, 'classification_failed');
  const none = await webhook('mail-in', body, { 'x-orch-signature': signWebhook('mail-secret', body) }, plain.http);
  t.is(none.status, 422);
  t.is(none.body.error, 'no_router_configured');
});

test('IngestStimulus: OK, ALREADY_EXISTS with the original id, INVALID_ARGUMENT, INTERNAL, UNAUTHENTICATED', async (t) => {
  const key = randomUUID();
  const ok = await h.ingest({ source_name: 'github', content: '{"repository":"grpc/x"}', idempotency_key: key, headers: { 'x-github-event': 'release' } });
  t.is(ok.code, status.OK);
  const row = await executionRow(ok.res?.workflow_execution_id ?? '');
  t.deepEqual(row?.input, { repo: 'grpc/x', event: 'release' });
  const dup = await h.ingest({ source_name: 'github', content: '{}', idempotency_key: key });
  t.is(dup.code, status.ALREADY_EXISTS);
  t.is(dup.metadata?.get('orch-stimulus-id')[0], ok.res?.stimulus_id);
  t.is(dup.metadata?.get('orch-error-code')[0], 'idempotent_duplicate');
  t.true(dup.details?.includes(ok.res?.stimulus_id ?? '?'));
  const low = await h.ingest({ source_name: 'chat', content: 'ambiguous' });
  t.is(low.code, status.INVALID_ARGUMENT);
  t.is(low.metadata?.get('orch-error-code')[0], 'classification_failed');
  const none = await plain.ingest({ source_name: 'chat', content: 'hello' });
  t.is(none.code, status.INVALID_ARGUMENT);
  t.is(none.metadata?.get('orch-error-code')[0], 'no_router_configured');
  const broken = await h.ingest({ source_name: 'missing-src', content: '{}' });
  t.is(broken.code, status.INTERNAL);
  t.is(broken.metadata?.get('orch-error-code')[0], 'workflow_error');
  const anon = await h.ingest({ source_name: 'github', content: '{}' }, '');
  t.is(anon.code, status.UNAUTHENTICATED);
  const noSource = await h.ingest({ source_name: '', content: 'x' });
  t.is(noSource.code, status.INVALID_ARGUMENT);
});

test('200 concurrent webhook deliveries with one key start exactly one workflow (counted in the database)', async (t) => {
  const marker = `race/${randomUUID()}`;
  const body = JSON.stringify({ repository: marker });
  const headers = { 'content-type': 'application/json', 'x-orch-signature': signWebhook(SECRET, body), 'x-idempotency-key': marker, 'x-github-event': 'push' };
  const results = await Promise.all(Array.from({ length: 200 }, () => webhook('github', body, headers)));
  const ok = results.filter((r) => r.status === 200);
  const dups = results.filter((r) => r.status === 409);
  t.is(ok.length, 1);
  t.is(dups.length, 199);
  const original = ok[0]!.body.stimulus_id;
  t.true(dups.every((d) => (d.body.details as { stimulus_id: string }).stimulus_id === original));
  const started = await executionRow(String(ok[0]!.body.workflow_execution_id));
  t.like(started?.input, { repo: marker });
  const runs = await h.node.db.query<{ n: number }>("SELECT count(*)::int AS n FROM workflow_executions WHERE input->>'repo' = $1", [marker]);
  t.is(runs.rows[0]?.n, 1);
  const stimuli = await h.node.db.query<{ n: number }>('SELECT count(*)::int AS n FROM stimuli WHERE idempotency_key = $1', [marker]);
  t.is(stimuli.rows[0]?.n, 1);
});

test('list and get are tenant-scoped', async (t) => {
  const acme = await h.token('acme');
  const globex = await h.token('globex');
  const mine = await h.api('POST', '/v1/stimuli', { body: { source: 'github', content: '{"repository":"acme/app"}' }, token: acme });
  t.is(mine.status, 200);
  const id = String(mine.body.stimulus_id);
  const list = await h.api<{ stimuli: { stimulus_id: string; tenant_id: string }[] }>('GET', '/v1/stimuli?source=github', { token: acme });
  t.is(list.status, 200);
  t.true(list.body.stimuli.some((s) => s.stimulus_id === id));
  t.true(list.body.stimuli.every((s) => s.tenant_id === 'acme'));
  const other = await h.api<{ stimuli: unknown[] }>('GET', '/v1/stimuli', { token: globex });
  t.deepEqual(other.body.stimuli, []);
  t.is((await h.api('GET', `/v1/stimuli/${id}`, { token: globex })).status, 404);
  t.is((await h.api('GET', `/v1/stimuli/${id}`, { token: acme })).status, 200);
  t.is((await h.api('GET', '/v1/stimuli/not-a-uuid', { token: acme })).status, 400);
  const system = await h.api<{ stimuli: { stimulus_id: string }[] }>('GET', '/v1/stimuli?limit=200');
  t.false(system.body.stimuli.some((s) => s.stimulus_id === id));
});

test('IngestStimulus PERMISSION_DENIED and POST /v1/stimuli 403 when the identity is not authorized (nothing written)', async (t) => {
  const marker = `denied/${randomUUID()}`;
  const content = JSON.stringify({ repository: marker });
  const user = await guarded.roleToken('user', 'denied-tenant');
  const grpcDenied = await guarded.ingest({ source_name: 'github', content, idempotency_key: marker }, user);
  t.is(grpcDenied.code, status.PERMISSION_DENIED);
  t.regex(String(grpcDenied.details), /not authorized/);
  const httpDenied = await guarded.api('POST', '/v1/stimuli', { body: { source: 'github', content, idempotency_key: marker }, token: user });
  t.is(httpDenied.status, 403);
  t.regex(String(httpDenied.body.error), /not authorized/);
  const written = await guarded.node.db.query<{ n: number }>('SELECT count(*)::int AS n FROM stimuli WHERE idempotency_key = $1', [marker]);
  t.is(written.rows[0]?.n, 0);
  // The key was not taken: an authorized identity of the same tenant is routed with it.
  const operator = await guarded.roleToken('operator', 'denied-tenant');
  await guarded.deployWorkflow('denied-tenant', workflowYaml('on-push'));
  const ok = await guarded.ingest({ source_name: 'github', content, idempotency_key: marker }, operator);
  t.is(ok.code, status.OK);
  t.regex(ok.res?.workflow_execution_id ?? '', /^[0-9a-f-]{36}$/);
  // Webhooks carry no identity; their HMAC is their authorization.
  const body = JSON.stringify({ repository: `${marker}/hook` });
  const hook = await webhook('github', body, { 'x-orch-signature': signWebhook(SECRET, body) }, guarded.http);
  t.is(hook.status, 200);
});
