// Dev identity mode: a key pair persisted under the data dir, reused by every process of that data dir, and
// accepted only by the authenticator of that data dir.
import test from 'ava';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { createAuthenticator } from '../../src/auth/authenticator.ts';
import { ensureDevIdentity } from '../../src/auth/dev-identity.ts';
import { loadNodeConfig } from '../../src/config/load.ts';
import { Errors, OrchError } from '../../src/errors/catalog.ts';

async function tempDir(t: import('ava').ExecutionContext): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-dev-id-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function devConfig(dataDir: string) {
  return loadNodeConfig({ env: { ORCH_DATA_DIR: dataDir } });
}

test('the first call makes the key files with private modes; the second call reuses them', async (t) => {
  const dir = await tempDir(t);
  const first = await ensureDevIdentity(dir);
  const idDir = path.join(dir, 'identity');
  t.is((await stat(idDir)).mode & 0o777, 0o700);
  t.is((await stat(path.join(idDir, 'dev-signing-key.json'))).mode & 0o777, 0o600);
  t.is((await stat(path.join(idDir, 'jwks.json'))).mode & 0o777, 0o600);
  t.deepEqual((await readdir(idDir)).sort(), ['dev-signing-key.json', 'jwks.json'], 'no temp files left behind');

  const onDisk = JSON.parse(await readFile(path.join(idDir, 'jwks.json'), 'utf8'));
  t.deepEqual(onDisk, first.jwks);
  const key = first.jwks.keys[0];
  t.truthy(key?.kid);
  t.is(key?.d, undefined, 'the public JWKS has no private part');

  const second = await ensureDevIdentity(dir);
  t.deepEqual(second.jwks, first.jwks);
  t.is(first.issuer, 'orch-dev');
  t.is(first.audience, 'orch');
});

test('two callers racing on an empty data dir end up with one key', async (t) => {
  const dir = await tempDir(t);
  const all = await Promise.all(Array.from({ length: 6 }, () => ensureDevIdentity(dir)));
  const kids = new Set(all.map((d) => d.jwks.keys[0]?.kid));
  t.is(kids.size, 1);
  const reloaded = await ensureDevIdentity(dir);
  t.is(reloaded.jwks.keys[0]?.kid, [...kids][0]);
});

test('its tokens verify with the authenticator of the same data dir, and not with another one', async (t) => {
  const dir = await tempDir(t);
  const otherDir = await tempDir(t);
  const dev = await ensureDevIdentity(dir);
  const same = await createAuthenticator(devConfig(dir));
  const other = await createAuthenticator(devConfig(otherDir));

  const token = await dev.sign({ role: 'operator' });
  const { expiresAt, ...p } = await same.authenticate(token, undefined);
  // The session ends with the token (the live feed closes at this instant).
  t.true(typeof expiresAt === 'number' && expiresAt > Date.now(), 'expiresAt is the token\'s exp, in the future');
  t.deepEqual(p, {
    subject: 'dev-user',
    username: 'dev-user',
    roles: ['operator', 'user'],
    tenantId: 'orch-system',
    homeTenantId: 'orch-system',
    isServiceAccount: false,
    delegated: false,
  });
  const err = await t.throwsAsync(other.authenticate(token, undefined), { instanceOf: OrchError });
  t.is(err?.spec, Errors.UNAUTHENTICATED);
});

test('token claims: user with a tenant, service account delegating, ttl and kid', async (t) => {
  const dir = await tempDir(t);
  const dev = await ensureDevIdentity(dir);
  const auth = await createAuthenticator(devConfig(dir));

  const user = await dev.sign({ tenant: 'acme', role: 'tenant-admin' });
  const claims = decodeJwt(user);
  t.is(claims.iss, 'orch-dev');
  t.is(claims.aud, 'orch');
  t.is(claims.tenant_id, 'acme');
  t.is(claims.preferred_username, 'dev-user');
  t.deepEqual(claims.realm_access, { roles: ['tenant-admin'] });
  t.is((claims.exp ?? 0) - (claims.iat ?? 0), 12 * 3600);
  t.is(decodeProtectedHeader(user).kid, dev.jwks.keys[0]?.kid);
  const asUser = await auth.authenticate(user, 'globex');
  t.is(asUser.tenantId, 'acme', 'a user cannot delegate');

  const sa = await dev.sign({ serviceAccount: true, role: 'operator', ttlSeconds: 60 });
  const saClaims = decodeJwt(sa);
  t.is(saClaims.preferred_username, 'service-account-orch-dev');
  t.is(saClaims.identity_type, 'service_account');
  t.is((saClaims.exp ?? 0) - (saClaims.iat ?? 0), 60);
  t.is((await auth.authenticate(sa, undefined)).tenantId, 'orch-system');
  const delegated = await auth.authenticate(sa, 'globex');
  t.is(delegated.tenantId, 'globex');
  t.true(delegated.delegated);

  t.is(decodeJwt(await dev.sign({ subject: 'alice' })).sub, 'alice');
  t.deepEqual(decodeJwt(await dev.sign({})).realm_access, { roles: [] });
});

test('bad token requests are refused', async (t) => {
  const dev = await ensureDevIdentity(await tempDir(t));
  for (const req of [{ tenant: 'Not A Slug' }, { ttlSeconds: 0 }, { ttlSeconds: Number.NaN }, { role: 'root' as never }]) {
    const err = await t.throwsAsync(dev.sign(req), { instanceOf: OrchError });
    t.is(err?.spec, Errors.BAD_REQUEST);
  }
});

test('a corrupt key file is reported, not silently replaced', async (t) => {
  const dir = await tempDir(t);
  await ensureDevIdentity(dir);
  const { writeFile } = await import('node:fs/promises');
  await writeFile(path.join(dir, 'identity', 'dev-signing-key.json'), '{"kty":');
  await t.throwsAsync(ensureDevIdentity(dir), { message: /corrupt; delete it/ });
});
