// Bearer JWT verification against a JWKS file made by a real RSA key pair, and Principal resolution with
// tenant delegation (CONTRACT.md "Identity"; seed 000 "Tenant delegation").
import test from 'ava';
import { writeFile } from 'node:fs/promises';
import { Errors, OrchError } from '../../src/errors/catalog.ts';
import { createJwtAuthenticator } from '../../src/auth/jwt-authenticator.ts';
import type { Authenticator } from '../../src/auth/principal.ts';
import { makeTestIdp, type TestIdp } from '../support/jwks.ts';

let idp: TestIdp;
let other: TestIdp;
let auth: Authenticator;

test.before(async () => {
  idp = await makeTestIdp();
  other = await makeTestIdp();
  auth = createJwtAuthenticator({ jwksFile: idp.jwksFile, issuer: idp.issuer, audience: idp.audience });
});

async function refused(t: import('ava').ExecutionContext, token: string | undefined, message: string | RegExp, header?: string): Promise<void> {
  const err = await t.throwsAsync(auth.authenticate(token, header), { instanceOf: OrchError });
  t.is(err?.spec, Errors.UNAUTHENTICATED);
  if (typeof message === 'string') t.is(err?.message, message);
  else t.regex(err?.message ?? '', message);
  if (token) t.false(err?.message.includes(token) ?? true, 'the token is never in the message');
}

test('a valid user token resolves roles and the home tenant', async (t) => {
  const token = await idp.sign({
    sub: 'u-1',
    preferred_username: 'alice',
    tenant_id: 'acme',
    realm_access: { roles: ['tenant-admin', 'offline_access', 'default-roles-orch'] },
  });
  const { expiresAt, ...principal } = await auth.authenticate(token, undefined);
  t.is(expiresAt, decodeExp(token), 'the principal ends when the token does');
  t.deepEqual(principal, {
    subject: 'u-1',
    username: 'alice',
    roles: ['tenant-admin', 'user'],
    tenantId: 'acme',
    homeTenantId: 'acme',
    isServiceAccount: false,
    delegated: false,
  });
});

test('an operator token; no tenant_id claim means the orch-system tenant', async (t) => {
  const p = await auth.authenticate(await idp.sign({ sub: 'op', realm_access: { roles: ['operator'] } }), undefined);
  t.deepEqual(p.roles, ['operator', 'user']);
  t.is(p.tenantId, 'orch-system');
  t.is(p.homeTenantId, 'orch-system');
  t.is(p.username, undefined);
});

test('X-Tenant-Id from a non-service-account token is ignored, even a malformed one', async (t) => {
  const token = await idp.sign({ sub: 'u-1', preferred_username: 'alice', tenant_id: 'acme' });
  for (const header of ['globex', 'NOT A SLUG']) {
    const p = await auth.authenticate(token, header);
    t.is(p.tenantId, 'acme');
    t.false(p.delegated);
  }
});

test('a service account with X-Tenant-Id acts in that tenant', async (t) => {
  const token = await idp.sign({ sub: 'sa-1', preferred_username: 'service-account-ci', tenant_id: 'acme' });
  const p = await auth.authenticate(token, 'globex');
  t.is(p.tenantId, 'globex');
  t.is(p.homeTenantId, 'acme');
  t.true(p.isServiceAccount);
  t.true(p.delegated);
});

test('a service account without the header acts in orch-system, whatever its tenant_id', async (t) => {
  const token = await idp.sign({ sub: 'sa-1', preferred_username: 'service-account-ci', tenant_id: 'acme' });
  for (const header of [undefined, '', '  ']) {
    const p = await auth.authenticate(token, header);
    t.is(p.tenantId, 'orch-system');
    t.false(p.delegated);
  }
});

test('both service-account forms are recognised: the username prefix and identity_type', async (t) => {
  const byName = await auth.authenticate(await idp.sign({ sub: 'a', preferred_username: 'service-account-robot' }), 'acme');
  t.true(byName.isServiceAccount);
  t.is(byName.tenantId, 'acme');
  const byClaim = await auth.authenticate(await idp.sign({ sub: 'b', preferred_username: 'robot', identity_type: 'service_account' }), 'acme');
  t.true(byClaim.isServiceAccount);
  t.is(byClaim.tenantId, 'acme');
  const neither = await auth.authenticate(await idp.sign({ sub: 'c', preferred_username: 'robot', identity_type: 'user' }), 'acme');
  t.false(neither.isServiceAccount);
});

test('a service account naming a malformed tenant gets 400, not 401', async (t) => {
  const token = await idp.sign({ sub: 'sa', preferred_username: 'service-account-ci' });
  for (const bad of ['Globex', 'a b', '-x', 'x'.repeat(64), 'acme, globex']) {
    const err = await t.throwsAsync(auth.authenticate(token, bad), { instanceOf: OrchError });
    t.is(err?.spec, Errors.BAD_REQUEST, bad);
  }
});

test('missing and malformed tokens are UNAUTHENTICATED', async (t) => {
  await refused(t, undefined, 'missing bearer token');
  await refused(t, '', 'missing bearer token');
  await refused(t, 'not.a.jwt', /^invalid token/);
  await refused(t, 'garbage', /^invalid token/);
});

test('a token signed by another key is UNAUTHENTICATED, with or without a kid the JWKS knows', async (t) => {
  await refused(t, await other.sign({ sub: 'mallory' }), 'invalid token: no matching signing key');
  await refused(t, await other.sign({ sub: 'mallory' }, { kid: idp.kid }), 'invalid token: signature verification failed');
});

test('a tampered payload fails signature verification', async (t) => {
  const token = await idp.sign({ sub: 'u', tenant_id: 'acme' });
  const [h, , s] = token.split('.');
  const forged = Buffer.from(JSON.stringify({ sub: 'u', tenant_id: 'globex', iss: idp.issuer, aud: idp.audience, exp: 9999999999 })).toString('base64url');
  await refused(t, `${h}.${forged}.${s}`, 'invalid token: signature verification failed');
});

test('an expired token is UNAUTHENTICATED', async (t) => {
  await refused(t, await idp.sign({ sub: 'u' }, { ttlSeconds: -60 }), 'invalid token: expired');
});

test('a token without exp is refused', async (t) => {
  await refused(t, await idp.sign({ sub: 'u' }, { noExp: true }), 'invalid token: missing exp claim');
});

test('wrong issuer or audience is UNAUTHENTICATED', async (t) => {
  await refused(t, await idp.sign({ sub: 'u' }, { issuer: 'https://evil.example' }), 'invalid token: wrong issuer');
  await refused(t, await idp.sign({ sub: 'u' }, { audience: 'account' }), 'invalid token: wrong audience');
});

test('a token without sub, or with a tenant_id that is not a slug, is refused', async (t) => {
  await refused(t, await idp.sign({ preferred_username: 'x' }), 'invalid token: missing sub claim');
  await refused(t, await idp.sign({ sub: 'u', tenant_id: '../etc' }), 'invalid token: tenant_id is not a tenant slug');
});

test('issuer and audience are unchecked when not configured', async (t) => {
  const lax = createJwtAuthenticator({ jwks: idp.jwks });
  const p = await lax.authenticate(await idp.sign({ sub: 'u' }, { issuer: 'anyone', audience: 'anything' }), undefined);
  t.is(p.subject, 'u');
});

test('a rotated JWKS file is picked up without a new authenticator', async (t) => {
  const rotating = await makeTestIdp();
  const a = createJwtAuthenticator({ jwksFile: rotating.jwksFile });
  const next = await makeTestIdp();
  await t.throwsAsync(a.authenticate(await next.sign({ sub: 'u' }), undefined));
  await writeFile(rotating.jwksFile, JSON.stringify({ keys: [...rotating.jwks.keys, ...next.jwks.keys] }));
  await new Promise((r) => setTimeout(r, 1100));
  t.is((await a.authenticate(await next.sign({ sub: 'u' }), undefined)).subject, 'u');
  t.is((await a.authenticate(await rotating.sign({ sub: 'v' }), undefined)).subject, 'v');
});

test('construction fails on a missing or empty JWKS, or on zero or several key sources', (t) => {
  t.throws(() => createJwtAuthenticator({ jwksFile: '/nonexistent/jwks.json' }), { message: /cannot read JWKS file/ });
  t.throws(() => createJwtAuthenticator({ jwks: { keys: [] } }), { message: /has no "keys"/ });
  t.throws(() => createJwtAuthenticator({}), { message: /exactly one/ });
  t.throws(() => createJwtAuthenticator({ jwks: idp.jwks, jwksFile: idp.jwksFile }), { message: /exactly one/ });
});

/** The `exp` claim of a compact JWT, in milliseconds. */
function decodeExp(token: string): number {
  const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp: number };
  return payload.exp * 1000;
}

test('a remembered verification never outlives the token: refused after its exp', async (t) => {
  const a = createJwtAuthenticator({ jwks: idp.jwks, issuer: idp.issuer, audience: idp.audience, clockToleranceSec: 0 });
  // 6 s, and then a wait until its exp: with 2 s the token had expired before the first authenticate in a suite run
  // at load ~20 (stop 35).
  const token = await idp.sign({ sub: 'short' }, { ttlSeconds: 6 });
  const { exp } = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { exp: number };
  t.is((await a.authenticate(token, undefined)).subject, 'short');
  t.is((await a.authenticate(token, undefined)).subject, 'short', 'again, from memory');
  await new Promise((r) => setTimeout(r, Math.max(0, exp * 1000 - Date.now()) + 100));
  const err = await t.throwsAsync(a.authenticate(token, undefined), { instanceOf: OrchError });
  t.is(err?.message, 'invalid token: expired');
});

test('a key removed from the JWKS file refuses its tokens within the recheck period, remembered or not', async (t) => {
  const rotating = await makeTestIdp();
  const a = createJwtAuthenticator({ jwksFile: rotating.jwksFile });
  const token = await rotating.sign({ sub: 'u' });
  t.is((await a.authenticate(token, undefined)).subject, 'u');
  const next = await makeTestIdp();
  await writeFile(rotating.jwksFile, JSON.stringify({ keys: next.jwks.keys }));
  const deadline = Date.now() + 5_000;
  let refusedAt: number | undefined;
  while (Date.now() < deadline && refusedAt === undefined) {
    await a.authenticate(token, undefined).then(
      () => undefined,
      () => (refusedAt = Date.now()),
    );
    await new Promise((r) => setTimeout(r, 50));
  }
  t.not(refusedAt, undefined, 'the removed key is not trusted from memory');
});

test('the tenant header is applied on every call, remembered token or not', async (t) => {
  const token = await idp.sign({ sub: 'svc', preferred_username: 'service-account-ci', tenant_id: 'acme' });
  t.is((await auth.authenticate(token, 'beta')).tenantId, 'beta');
  t.is((await auth.authenticate(token, 'gamma')).tenantId, 'gamma');
  t.is((await auth.authenticate(token, undefined)).tenantId, 'orch-system');
});
