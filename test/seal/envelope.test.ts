// SealService in-process on a real PGlite database: attestation checks, signature over exactly the payload bytes,
// tamper, wrong key, 31 s old, future, replay, ended execution, argument and policy mapping.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { buildEnvelope, generateKeyPair, publicKeyBase64, publicKeyPem, signPayload } from '../../src/seal/client.ts';
import { EnvelopeError, parsePublicKey, verifySignature, type SealEnvelope } from '../../src/seal/envelope.ts';
import { fixture, type Fixture } from './harness.ts';

let f: Fixture;
test.before(async () => {
  f = await fixture();
});
test.after.always(async () => f?.close());

const sign = (name: string, args: Record<string, unknown>, o: { now?: number; key?: Uint8Array; token?: string } = {}) =>
  buildEnvelope(name, args, { securityToken: o.token ?? f.token, privateKey: o.key ?? f.keys.privateKey, ...(o.now !== undefined ? { now: o.now } : {}) });

test('verify: a signed call succeeds with the MCP CallToolResult shape', async (t) => {
  const e = sign('fs.read', { path: 'a.txt' });
  const res = await f.seal.invoke(e);
  t.is(res.httpStatus, 200);
  t.is(res.grpcStatus, 0);
  const id = JSON.parse(e.payload.toString()).id;
  t.deepEqual(res.body, { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: '{"content":"hello"}' }], isError: false } });
});

test('keys: PEM and raw base64 are the same key; other forms refused', (t) => {
  const k = generateKeyPair();
  t.deepEqual(parsePublicKey(publicKeyPem(k.publicKey)), Buffer.from(k.publicKey));
  t.deepEqual(parsePublicKey(publicKeyBase64(k.publicKey)), Buffer.from(k.publicKey));
  t.throws(() => parsePublicKey('abc'), { instanceOf: EnvelopeError });
  t.throws(() => parsePublicKey(Buffer.alloc(31).toString('base64')), { instanceOf: EnvelopeError });
  const e = signPayload(Buffer.from('x'), { securityToken: 't', privateKey: k.privateKey });
  t.true(verifySignature(k.publicKey, e.payload, Buffer.from(e.signature, 'base64')));
  t.false(verifySignature(k.publicKey, Buffer.from('y'), Buffer.from(e.signature, 'base64')));
});

test('tampered payload: 401 -32000', async (t) => {
  const e = sign('fs.read', { path: 'a.txt' });
  const tampered: SealEnvelope = { ...e, payload: Buffer.from(e.payload.toString().replace('a.txt', 'b.txt')) };
  const res = await f.seal.invoke(tampered);
  t.is(res.httpStatus, 401);
  t.like(res.body, { jsonrpc: '2.0', error: { code: -32000, data: null } });
});

test('wrong key: 401', async (t) => {
  const res = await f.seal.invoke(sign('fs.read', { path: 'a' }, { key: generateKeyPair().privateKey }));
  t.is(res.httpStatus, 401);
  t.regex((res.body as { error: { message: string } }).error.message, /signature/);
});

test('31 s old and 31 s in the future: 401; 29 s old passes', async (t) => {
  t.is((await f.seal.invoke(sign('fs.read', { path: 'a' }, { now: Date.now() - 31_000 }))).httpStatus, 401);
  t.is((await f.seal.invoke(sign('fs.read', { path: 'a' }, { now: Date.now() + 31_000 }))).httpStatus, 401);
  t.is((await f.seal.invoke(sign('fs.read', { path: 'a' }, { now: Date.now() - 29_000 }))).httpStatus, 200);
});

test('replay: the same envelope twice is refused the second time', async (t) => {
  const e = sign('fs.read', { path: 'a' });
  t.is((await f.seal.invoke(e)).httpStatus, 200);
  const again = await f.seal.invoke(e);
  t.is(again.httpStatus, 401);
  t.regex((again.body as { error: { message: string } }).error.message, /replay/);
});

test('bad token, token of another session key, malformed envelope', async (t) => {
  t.is((await f.seal.invoke(sign('fs.read', { path: 'a' }, { token: 'not.a.jwt' }))).httpStatus, 401);
  t.is((await f.seal.invoke(sign('fs.read', { path: 'a' }, { token: f.token.slice(0, -3) + 'AAA' }))).httpStatus, 401);
  const r = await f.seal.invoke(new EnvelopeError('protocol must be seal/v1'));
  t.is(r.httpStatus, 400);
  t.like(r.body, { id: null, error: { code: -32600, data: null } });
  const noName = signPayload(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: {} })), { securityToken: f.token, privateKey: f.keys.privateKey });
  t.like((await f.seal.invoke(noName)).body, { id: 7, error: { code: -32600 } });
});

test('arguments and policy: 422 naming field and tool, 403 denied tool and path escape, 200 isError for a tool error', async (t) => {
  const missing = await f.seal.invoke(sign('fs.read', { path: null }));
  t.is(missing.httpStatus, 422);
  t.like(missing.body, { error: { code: -32602, message: 'Missing required argument path for tool fs.read.', data: null } });
  const denied = await f.seal.invoke(sign('cmd.run', { command: 'ls' }));
  t.is(denied.httpStatus, 403);
  t.is(denied.grpcStatus, 7);
  t.like(denied.body, { error: { code: -32000 } });
  t.is((await f.seal.invoke(sign('fs.read', { path: '../etc/passwd' }))).httpStatus, 403);
  const toolErr = await f.seal.invoke(sign('fs.read', { path: 'missing' }));
  t.is(toolErr.httpStatus, 200);
  t.true((toolErr.body as { result: { isError: boolean } }).result.isError);
});

test('attestation: wrong agent, wrong container, ended execution, bad key are refused', async (t) => {
  const x = await f.newExecution();
  const key = publicKeyBase64(generateKeyPair().publicKey);
  await t.throwsAsync(f.seal.attest({ agent_id: randomUUID(), execution_id: x.executionId, container_id: x.containerId, public_key: key }), { message: /refused/ });
  await t.throwsAsync(f.seal.attest({ agent_id: x.agentId, execution_id: x.executionId, container_id: 'process-other', public_key: key }), { message: /container_id/ });
  await t.throwsAsync(f.seal.attest({ agent_id: x.agentId, execution_id: x.executionId, container_id: x.containerId, public_key: 'zz' }), { message: /base64|key/ });
  const ok = await f.seal.attest({ agent_id: x.agentId, execution_id: x.executionId, container_id: x.containerId, public_key: publicKeyPem(generateKeyPair().publicKey) });
  t.truthy(ok.session_id);
  t.true(Date.parse(ok.expires_at) <= Date.now() + 120_000 + 1000);
  await f.setStatus(x.executionId, 'completed');
  await t.throwsAsync(f.seal.attest({ agent_id: x.agentId, execution_id: x.executionId, container_id: x.containerId, public_key: key }), { message: /completed/ });
});

test('token of another execution signed with this key is refused; ended execution → 403', async (t) => {
  const x = await f.newExecution();
  const k2 = generateKeyPair();
  const att = await f.seal.attest({ agent_id: x.agentId, execution_id: x.executionId, container_id: x.containerId, public_key: publicKeyBase64(k2.publicKey) });
  // The other execution's token with our key: its session's key does not verify our signature.
  t.is((await f.seal.invoke(sign('fs.read', { path: 'a' }, { token: att.security_token }))).httpStatus, 401);
  t.is((await f.seal.invoke(sign('fs.read', { path: 'a' }, { token: att.security_token, key: k2.privateKey }))).httpStatus, 200);
  await f.setStatus(x.executionId, 'cancelled');
  const ended = await f.seal.invoke(sign('fs.read', { path: 'a' }, { token: att.security_token, key: k2.privateKey }));
  t.is(ended.httpStatus, 403);
  t.regex((ended.body as { error: { message: string } }).error.message, /inactive/);
});
