// Small helpers the transports call: bearer extraction and role checks.
import test from 'ava';
import { bearerToken } from '../../src/auth/http-auth.ts';
import type { Principal } from '../../src/auth/principal.ts';
import { hasRole, requireRole } from '../../src/auth/roles.ts';
import { Errors, OrchError } from '../../src/errors/catalog.ts';

test('bearerToken takes the token of a Bearer header, scheme case-insensitive', (t) => {
  t.is(bearerToken('Bearer abc.def.ghi'), 'abc.def.ghi');
  t.is(bearerToken('bearer abc'), 'abc');
  t.is(bearerToken('BEARER   abc  '), 'abc');
  t.is(bearerToken(undefined), undefined);
  t.is(bearerToken(''), undefined);
  t.is(bearerToken('Basic dXNlcjpwYXNz'), undefined);
  t.is(bearerToken('Bearer'), undefined);
  t.is(bearerToken('Bearer a b'), undefined);
  t.is(bearerToken('Bearerabc'), undefined);
});

const principal = (roles: Principal['roles']): Principal => ({
  subject: 's',
  roles,
  tenantId: 'acme',
  homeTenantId: 'acme',
  isServiceAccount: false,
  delegated: false,
});

test('requireRole passes with any of the roles and is FORBIDDEN otherwise', (t) => {
  t.notThrows(() => requireRole(principal(['operator', 'user']), 'operator', 'tenant-admin'));
  t.notThrows(() => requireRole(principal(['user']), 'user'));
  const err = t.throws(() => requireRole(principal(['tenant-admin', 'user']), 'operator'), { instanceOf: OrchError });
  t.is(err?.spec, Errors.FORBIDDEN);
  t.is(err?.message, 'requires role operator');
  t.true(hasRole(principal(['tenant-admin', 'user']), 'operator', 'tenant-admin'));
  t.false(hasRole(principal(['user']), 'operator'));
});
