// The HTTP server over real sockets: health, auth (401s, tenant delegation), JSON errors, request ids, 501s.
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildHttpApp } from '../../src/gateway/http/app.ts';
import { createJwtAuthenticator } from '../../src/auth/jwt-authenticator.ts';
import { openDb } from '../../src/storage/open.ts';
import type { Db } from '../../src/storage/db.ts';
import { ClusterService } from '../../src/cluster/service.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { makeTestIdp } from '../support/jwks.ts';

let app: FastifyInstance;
let db: Db;
let base: string;
let dir: string;
let idp: Awaited<ReturnType<typeof makeTestIdp>>;
let otherIdp: Awaited<ReturnType<typeof makeTestIdp>>;
let shuttingDown = false;

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'orch-http-'));
  idp = await makeTestIdp();
  otherIdp = await makeTestIdp();
  db = await openDb({ dataDir: dir }, silentLogger());
  const authenticator = createJwtAuthenticator({ jwksFile: idp.jwksFile, issuer: idp.issuer, audience: idp.audience });
  app = await buildHttpApp({
    logger: silentLogger(),
    db,
    authenticator,
    cluster: new ClusterService(db),
    isShuttingDown: () => shuttingDown,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});

test.after.always(async () => {
  await app?.close();
  await db?.close();
  await rm(dir, { recursive: true, force: true });
});

async function get(p: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(`${base}${p}`, { headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

test.serial('GET /health answers {"status":"ok"} without auth; ready reflects the database and shutdown', async (t) => {
  t.deepEqual((await get('/health')).body, { status: 'ok' });
  t.is((await get('/health/live')).status, 200);
  const ready = await get('/health/ready');
  t.is(ready.status, 200);
  t.is(ready.body.database, 'pglite');
  shuttingDown = true;
  try {
    t.is((await get('/health/ready')).status, 503);
  } finally {
    shuttingDown = false;
  }
});

test('a request without a token gets 401 with a JSON error', async (t) => {
  const res = await get('/v1/whoami');
  t.is(res.status, 401);
  t.is(typeof res.body.error, 'string');
  t.regex(String(res.body.error), /token/);
});

test('a token signed by another key gets 401', async (t) => {
  const token = await otherIdp.sign({ sub: 'mallory', tenant_id: 'acme' });
  const res = await get('/v1/whoami', { authorization: `Bearer ${token}` });
  t.is(res.status, 401);
  t.false(JSON.stringify(res.body).includes(token), 'the token is not echoed');
});

test('a garbage bearer value gets 401', async (t) => {
  t.is((await get('/v1/whoami', { authorization: 'Bearer not.a.jwt' })).status, 401);
  t.is((await get('/v1/whoami', { authorization: 'Basic dXNlcjpwYXNz' })).status, 401);
});

test('X-Tenant-Id from a user token is ignored; a service account acts in the named tenant', async (t) => {
  const user = await idp.sign({ sub: 'u1', preferred_username: 'alice', tenant_id: 'acme', realm_access: { roles: ['tenant-admin'] } });
  const asUser = await get('/v1/whoami', { authorization: `Bearer ${user}`, 'x-tenant-id': 'globex' });
  t.is(asUser.status, 200);
  t.is(asUser.body.tenant_id, 'acme');
  t.false(asUser.body.delegated as boolean);
  t.true((asUser.body.roles as string[]).includes('tenant-admin'));
  t.false((asUser.body.roles as string[]).includes('operator'));

  const sa = await idp.sign({ sub: 's1', preferred_username: 'service-account-ci' });
  const delegated = await get('/v1/whoami', { authorization: `Bearer ${sa}`, 'X-Tenant-Id': 'globex' });
  t.is(delegated.body.tenant_id, 'globex');
  t.true(delegated.body.delegated as boolean);
  const system = await get('/v1/whoami', { authorization: `Bearer ${sa}` });
  t.is(system.body.tenant_id, 'orch-system');
});

test('request ids: a sane given id is echoed, otherwise one is made', async (t) => {
  const given = await get('/health', { 'x-request-id': 'req-123' });
  t.is(given.headers.get('x-request-id'), 'req-123');
  const made = await get('/health', { 'x-request-id': 'bad id with spaces' });
  t.regex(made.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
});

test('unknown routes are a JSON 404; routes of later issues are 501 behind auth', async (t) => {
  const token = await idp.sign({ sub: 'u1', tenant_id: 'acme' });
  const missing = await get('/v1/nope', { authorization: `Bearer ${token}` });
  t.is(missing.status, 404);
  t.regex(String(missing.body.error), /route not found/);
  const planned = await get('/v1/agents', { authorization: `Bearer ${token}` });
  t.is(planned.status, 501);
  t.regex(String(planned.body.error), /not implemented/);
  t.is((await get('/v1/agents')).status, 401, 'auth comes before 501');
});

test('bad JSON body is a 400 with a JSON error', async (t) => {
  const token = await idp.sign({ sub: 'u1', tenant_id: 'acme' });
  const res = await fetch(`${base}/v1/executions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{not json',
  });
  t.is(res.status, 400);
  t.is(typeof ((await res.json()) as { error: unknown }).error, 'string');
});

test('GET /v1/cluster/nodes validates its status filter', async (t) => {
  const token = await idp.sign({ sub: 'u1', tenant_id: 'acme' });
  const bad = await get('/v1/cluster/nodes?status=SLEEPY', { authorization: `Bearer ${token}` });
  t.is(bad.status, 400);
  const ok = await get('/v1/cluster/nodes?status=active', { authorization: `Bearer ${token}` });
  t.is(ok.status, 200);
  t.deepEqual(ok.body.nodes, []);
});
