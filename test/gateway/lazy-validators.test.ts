// The routes' request validators are compiled on first use or by warm(), not while the HTTP app is built (issue 15
// item 4: fastify compiling ~120 validators at `ready` was ~0.4 s of a node's start). Validation itself must not
// change: the same 400 for a bad body before and after warm(), and every route schema compiles.
import test from 'ava';
import { buildHttpApp } from '../../src/gateway/http/app.ts';
import { lazyValidators } from '../../src/gateway/http/lazy-validators.ts';
import { createJwtAuthenticator } from '../../src/auth/jwt-authenticator.ts';
import { ClusterService } from '../../src/cluster/service.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { makeTestIdp } from '../support/jwks.ts';
import { ajvCompilations } from '../support/ajv-compilations.ts';

test('building the HTTP app compiles no route validator; a bad body is refused the same before and after warm()', async (t) => {
  const idp = await makeTestIdp();
  // No query reaches the database here: a drain with a bad body is refused by its validator.
  const db = { kind: 'pglite' } as unknown as Db;
  const validators = lazyValidators();
  const { value: app, stacks } = await ajvCompilations(() =>
    buildHttpApp({
      logger: silentLogger(),
      db,
      authenticator: createJwtAuthenticator({ jwksFile: idp.jwksFile, issuer: idp.issuer, audience: idp.audience }),
      cluster: new ClusterService(db),
      isShuttingDown: () => false,
      validators,
    }),
  );
  t.teardown(() => app.close());
  t.is(stacks.length, 0, 'validators compiled while the app was built');
  const before = validators.pending();
  t.true(before > 0, 'no validator waits to be compiled');

  const token = await idp.sign({ sub: 'op', tenant_id: 'acme', realm_access: { roles: ['operator'] } });
  const drain = () =>
    app.inject({ method: 'POST', url: '/v1/cluster/nodes/n1/drain', headers: { authorization: `Bearer ${token}` }, payload: { reason: 5 } });
  const first = await drain();
  t.is(first.statusCode, 400, first.body);
  t.regex(first.body, /body\/reason must be string/);
  t.true(validators.pending() < before, 'the validator used was compiled');

  await validators.warm();
  t.is(validators.pending(), 0);
  const again = await drain();
  t.is(again.statusCode, 400);
  t.is(again.body, first.body);
});
