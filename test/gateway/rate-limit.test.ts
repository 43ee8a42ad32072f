// HTTP rate limits (issue 19): per client address before authentication, per tenant on /v1 after it, per source
// on webhooks; 429 in the usual error body with Retry-After; counters in Redis hold across nodes; a Redis outage lets
// requests through; the defaults of NodeConfig and their validation.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { createJwtAuthenticator } from '../../src/auth/jwt-authenticator.ts';
import { loadNodeConfig } from '../../src/config/load.ts';
import type { RateLimitsConfig } from '../../src/config/types.ts';
import { installAuth } from '../../src/gateway/http/auth-hook.ts';
import { installErrorHandling } from '../../src/gateway/http/errors.ts';
import { installRateLimits } from '../../src/gateway/http/rate-limit.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { makeTestIdp, type TestIdp } from '../support/jwks.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
let idp: TestIdp;
test.before(async () => {
  idp = await makeTestIdp();
});

function limits(over: Partial<RateLimitsConfig> = {}): RateLimitsConfig {
  const big = { max: 1_000_000, window_seconds: 60 };
  return { enabled: true, per_ip: big, per_tenant: big, per_webhook_source: big, exempt_ips: ['127.0.0.1'], exempt_tenants: ['orch-system'], ...over };
}

async function app(t: import('ava').ExecutionContext, config: RateLimitsConfig, redisUrl?: string): Promise<FastifyInstance> {
  const a = Fastify();
  installErrorHandling(a);
  const l = await installRateLimits(a, { config, logger: silentLogger(), ...(redisUrl ? { redisUrl } : {}) });
  installAuth(a, createJwtAuthenticator({ jwksFile: idp.jwksFile, issuer: idp.issuer, audience: idp.audience }));
  l.afterAuth();
  a.get('/health', async () => ({ status: 'ok' }));
  a.get('/v1/whoami', async (req) => ({ tenant: req.principal?.tenantId }));
  a.post('/v1/webhooks/:source', async () => ({ accepted: true }));
  await a.ready();
  t.teardown(() => a.close());
  return a;
}

const tenantToken = (tenant: string): Promise<string> => idp.sign({ sub: `u-${tenant}`, tenant_id: tenant, realm_access: { roles: ['tenant-admin'] } });
const randomIp = (): string => `10.${randomBytes(3).join('.')}`;

test('per client address: the request over the limit is 429 with Retry-After, before any token is checked', async (t) => {
  const a = await app(t, limits({ per_ip: { max: 3, window_seconds: 60 } }));
  const ip = randomIp();
  for (let i = 0; i < 3; i++) t.is((await a.inject({ method: 'GET', url: '/v1/whoami', remoteAddress: ip, headers: { authorization: 'Bearer garbage' } })).statusCode, 401);
  const over = await a.inject({ method: 'GET', url: '/v1/whoami', remoteAddress: ip, headers: { authorization: 'Bearer garbage' } });
  t.is(over.statusCode, 429, 'refused before the bad token is even looked at');
  const retry = Number(over.headers['retry-after']);
  t.true(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
  t.regex((over.json() as { error: string }).error, /rate limit exceeded \(ip: 3 requests per 60 s\)/);
  t.is(over.headers['x-ratelimit-remaining'], '0');
  t.is((await a.inject({ method: 'GET', url: '/v1/whoami', remoteAddress: randomIp(), headers: { authorization: 'Bearer garbage' } })).statusCode, 401, 'another address has its own count');
  t.is((await a.inject({ method: 'GET', url: '/health', remoteAddress: ip })).statusCode, 200, 'health probes are not limited');
  for (let i = 0; i < 6; i++) t.is((await a.inject({ method: 'GET', url: '/health', remoteAddress: '127.0.0.1' })).statusCode, 200);
  for (let i = 0; i < 6; i++) t.not((await a.inject({ method: 'GET', url: '/v1/whoami', remoteAddress: '127.0.0.1' })).statusCode, 429, 'exempt address');
});

test('per tenant: one tenant over its limit does not stop another; the operators\' tenant is exempt', async (t) => {
  const a = await app(t, limits({ per_tenant: { max: 4, window_seconds: 60 } }));
  const [ta, tb] = [`rl-a-${randomBytes(3).toString('hex')}`, `rl-b-${randomBytes(3).toString('hex')}`];
  const [tokA, tokB] = await Promise.all([tenantToken(ta), tenantToken(tb)]);
  // From different addresses: the tenant's requests are counted together.
  for (let i = 0; i < 4; i++) t.is((await a.inject({ method: 'GET', url: '/v1/whoami', remoteAddress: randomIp(), headers: { authorization: `Bearer ${tokA}` } })).statusCode, 200);
  const over = await a.inject({ method: 'GET', url: '/v1/whoami', remoteAddress: randomIp(), headers: { authorization: `Bearer ${tokA}` } });
  t.is(over.statusCode, 429);
  t.truthy(over.headers['retry-after']);
  t.regex((over.json() as { error: string }).error, /tenant: 4 requests per 60 s/);
  t.is((await a.inject({ method: 'GET', url: '/v1/whoami', headers: { authorization: `Bearer ${tokB}` } })).statusCode, 200);
  const op = await tenantToken('orch-system');
  for (let i = 0; i < 6; i++) t.is((await a.inject({ method: 'GET', url: '/v1/whoami', headers: { authorization: `Bearer ${op}` } })).statusCode, 200);
});

test('per webhook source', async (t) => {
  const a = await app(t, limits({ per_webhook_source: { max: 2, window_seconds: 60 } }));
  const [s1, s2] = [`src1-${randomBytes(3).toString('hex')}`, `src2-${randomBytes(3).toString('hex')}`];
  for (let i = 0; i < 2; i++) t.is((await a.inject({ method: 'POST', url: `/v1/webhooks/${s1}`, payload: {} })).statusCode, 200);
  const over = await a.inject({ method: 'POST', url: `/v1/webhooks/${s1}`, payload: {} });
  t.is(over.statusCode, 429);
  t.regex((over.json() as { error: string }).error, /webhook: 2 requests per 60 s/);
  t.is((await a.inject({ method: 'POST', url: `/v1/webhooks/${s2}`, payload: {} })).statusCode, 200);
});

test('with Redis the counts are shared by the nodes; with Redis unreachable requests pass', async (t) => {
  const config = limits({ per_tenant: { max: 5, window_seconds: 60 } });
  const [n1, n2] = [await app(t, config, REDIS_URL), await app(t, config, REDIS_URL)];
  const tenant = `rl-r-${randomBytes(4).toString('hex')}`;
  const token = await tenantToken(tenant);
  const call = (n: FastifyInstance) => n.inject({ method: 'GET', url: '/v1/whoami', headers: { authorization: `Bearer ${token}` } });
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await call(i % 2 === 0 ? n1 : n2)).statusCode);
  t.deepEqual(statuses, [200, 200, 200, 200, 200, 429], 'five in all across two nodes, then refused on either');
  t.is((await call(n1)).statusCode, 429);

  // Nothing listens on this port: a limit that cannot be counted does not refuse requests.
  const down = await app(t, limits({ per_tenant: { max: 1, window_seconds: 60 } }), 'redis://127.0.0.1:1');
  for (let i = 0; i < 3; i++) t.is((await down.inject({ method: 'GET', url: '/v1/whoami', headers: { authorization: `Bearer ${token}` } })).statusCode, 200);
});

test('NodeConfig: defaults, overrides and validation of spec.rate_limits', (t) => {
  const yaml = (m: string) => `apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: m }\nspec:\n  node: { id: m }\n${m}`;
  const d = loadNodeConfig({ text: yaml(''), env: {} }).rate_limits;
  t.like(d, { enabled: true, per_ip: { max: 60_000, window_seconds: 60 }, per_tenant: { max: 60_000, window_seconds: 60 }, exempt_tenants: ['orch-system'] });
  const o = loadNodeConfig({ text: yaml('  rate_limits: { per_tenant: { max: 100 }, exempt_ips: [] }\n'), env: {} }).rate_limits;
  t.deepEqual(o?.per_tenant, { max: 100, window_seconds: 60 });
  t.deepEqual(o?.exempt_ips, []);
  t.throws(() => loadNodeConfig({ text: yaml('  rate_limits: { per_ip: { max: 0 } }\n'), env: {} }), { message: /per_ip/ });
  t.throws(() => loadNodeConfig({ text: yaml('  rate_limits: { per_tenant: { maximum: 5 } }\n'), env: {} }), { message: /maximum/ });
});
