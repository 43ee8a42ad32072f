// Property: whatever arrives — random JSON, malformed envelopes, valid signatures over junk, real calls with random
// tool names and arguments, stale or future timestamps, replays, foreign tokens — SealService.invoke and
// POST /v1/seal/invoke answer a JSON-RPC 2.0 body with a status in {200, 400, 401, 403, 422, 500/-32603}, and never
// crash. In-process on a real PGlite database, then over real HTTP with fewer runs.
import test from 'ava';
import fc from 'fast-check';
import Fastify from 'fastify';
import { buildEnvelope, generateKeyPair, signPayload, toHttpBody, type BuiltEnvelope } from '../../src/seal/client.ts';
import { envelopeFromHttp, EnvelopeError, type SealEnvelope } from '../../src/seal/envelope.ts';
import { installErrorHandling } from '../../src/gateway/http/errors.ts';
import { registerSealRoutes } from '../../src/gateway/http/seal-routes.ts';
import { fixture, type Fixture } from './harness.ts';

let f: Fixture;
test.before(async () => {
  f = await fixture();
});
test.after.always(async () => f?.close());

const ALLOWED = new Set([200, 400, 401, 403, 422, 500]);
const CODE: Record<number, number[]> = { 400: [-32600], 401: [-32000], 403: [-32000], 422: [-32602], 500: [-32603] };
const stranger = generateKeyPair();

function checkAnswer(t: { fail(m: string): void }, status: number, body: unknown): boolean {
  if (!ALLOWED.has(status)) return false;
  if (typeof body !== 'object' || body === null) return false;
  const b = body as Record<string, unknown>;
  if (b.jsonrpc !== '2.0' || !('id' in b)) return false;
  if (status === 200) {
    const r = b.result as { content?: unknown[]; isError?: unknown } | undefined;
    return Array.isArray(r?.content) && typeof r.isError === 'boolean';
  }
  const e = b.error as { code?: number; message?: unknown; data?: unknown } | undefined;
  void t;
  return !!e && CODE[status]!.includes(e.code ?? 0) && typeof e.message === 'string' && e.data === null;
}

const toolName = fc.oneof(fc.constantFrom('fs.read', 'orch.tools.list', 'cmd.run', 'fs.write', '', 'x'.repeat(300)), fc.string());
const args = fc.oneof(
  fc.dictionary(fc.constantFrom('path', 'command', 'content', 'args', '__proto__', 'constructor'), fc.jsonValue()),
  fc.dictionary(fc.string(), fc.jsonValue()),
);
const timeOffset = fc.oneof(fc.constant(0), fc.integer({ min: -60_000, max: 60_000 }));

/** An envelope of one of several kinds, in the gRPC form (payload bytes). */
const envelope: fc.Arbitrary<BuiltEnvelope | { raw: unknown }> = fc.oneof(
  // A real call, maybe with a skewed clock, a stranger's key or a mangled token.
  fc.record({ name: toolName, args, off: timeOffset, key: fc.constantFrom('own', 'stranger'), token: fc.constantFrom('own', 'junk', 'cut') }).map((r) =>
    buildEnvelope(r.name, r.args, {
      securityToken: r.token === 'own' ? f.token : r.token === 'junk' ? 'eyJ.junk.x' : f.token.slice(0, 40),
      privateKey: r.key === 'own' ? f.keys.privateKey : stranger.privateKey,
      now: Date.now() + r.off,
    }),
  ),
  // Valid signature over junk bytes or junk JSON-RPC.
  fc.oneof(
    fc.uint8Array({ minLength: 0, maxLength: 200 }),
    fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
    fc.record({ jsonrpc: fc.constantFrom('2.0', '1.0', 2), id: fc.jsonValue(), method: fc.constantFrom('tools/call', 'tools/list', ''), params: fc.jsonValue() }).map((v) => Buffer.from(JSON.stringify(v))),
  ).map((payload) => signPayload(payload, { securityToken: f.token, privateKey: f.keys.privateKey })),
  // Anything at all as the HTTP body.
  fc.anything().map((raw) => ({ raw })),
  // A real envelope with one field replaced by anything.
  fc.record({ field: fc.constantFrom('protocol', 'security_token', 'signature', 'payload', 'timestamp'), value: fc.jsonValue() }).map(({ field, value }) => ({
    raw: { ...toHttpBody(buildEnvelope('fs.read', { path: 'a' }, { securityToken: f.token, privateKey: f.keys.privateKey })), [field]: value },
  })),
);

function asHttpBody(e: BuiltEnvelope | { raw: unknown }): unknown {
  return 'raw' in e ? e.raw : toHttpBody(e);
}

test('SealService.invoke in-process: 3000 random envelopes, statuses and bodies always mapped', async (t) => {
  await fc.assert(
    fc.asyncProperty(envelope, fc.boolean(), async (e, replay) => {
      let env: SealEnvelope | EnvelopeError;
      try {
        env = envelopeFromHttp(asHttpBody(e));
      } catch (err) {
        if (!(err instanceof EnvelopeError)) return false;
        env = err;
      }
      const res = await f.seal.invoke(env);
      if (!checkAnswer(t, res.httpStatus, res.body)) return false;
      if (replay && res.httpStatus === 200) {
        const again = await f.seal.invoke(env);
        return again.httpStatus === 401;
      }
      return true;
    }),
    { numRuns: 3000 },
  );
  t.pass();
});

test('POST /v1/seal/invoke over real HTTP: 400 random bodies and content types', async (t) => {
  const app = Fastify();
  installErrorHandling(app);
  await registerSealRoutes(app, f.seal);
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  await fc.assert(
    fc.asyncProperty(envelope, fc.constantFrom('application/json', 'text/plain', 'application/octet-stream', undefined), fc.boolean(), async (e, ctype, rawText) => {
      const body = asHttpBody(e);
      const text = rawText && typeof body === 'string' ? body : (JSON.stringify(body) ?? 'undefined');
      const res = await fetch(`${base}/v1/seal/invoke`, { method: 'POST', headers: ctype ? { 'content-type': ctype } : {}, body: text });
      const json = (await res.json()) as unknown;
      return checkAnswer(t, res.status, json);
    }),
    { numRuns: 400 },
  );
  t.pass();
});
