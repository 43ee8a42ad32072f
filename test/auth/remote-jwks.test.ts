// jwks_url: keys fetched from an identity provider over real HTTP; an unreachable provider is 503, not 401.
import test from 'ava';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Errors, OrchError } from '../../src/errors/catalog.ts';
import { createJwtAuthenticator } from '../../src/auth/jwt-authenticator.ts';
import { makeTestIdp } from '../support/jwks.ts';

async function serve(handler: Parameters<typeof createServer>[1]): Promise<{ url: string; server: Server; hits: () => number }> {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    handler?.(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/realms/orch/protocol/openid-connect/certs`, server, hits: () => hits };
}

test('tokens verify against keys served at jwks_url, which are cached', async (t) => {
  const idp = await makeTestIdp();
  const { url, server, hits } = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(idp.jwks));
  });
  t.teardown(() => server.close());
  const auth = createJwtAuthenticator({ jwksUrl: url, issuer: idp.issuer, audience: idp.audience });
  t.is((await auth.authenticate(await idp.sign({ sub: 'u', tenant_id: 'acme' }), undefined)).tenantId, 'acme');
  t.is((await auth.authenticate(await idp.sign({ sub: 'v' }), undefined)).subject, 'v');
  t.is(hits(), 1);
  const other = await makeTestIdp();
  const err = await t.throwsAsync(auth.authenticate(await other.sign({ sub: 'm' }), undefined), { instanceOf: OrchError });
  t.is(err?.spec, Errors.UNAUTHENTICATED);
});

test('an identity provider that fails is UNAVAILABLE (503)', async (t) => {
  const idp = await makeTestIdp();
  const { url, server } = await serve((_req, res) => {
    res.writeHead(500);
    res.end('down');
  });
  t.teardown(() => server.close());
  const auth = createJwtAuthenticator({ jwksUrl: url });
  const err = await t.throwsAsync(auth.authenticate(await idp.sign({ sub: 'u' }), undefined), { instanceOf: OrchError });
  t.is(err?.spec.http, 503);

  const closed = createJwtAuthenticator({ jwksUrl: 'http://127.0.0.1:9/certs' });
  const err2 = await t.throwsAsync(closed.authenticate(await idp.sign({ sub: 'u' }), undefined), { instanceOf: OrchError });
  t.is(err2?.spec.http, 503);
});
