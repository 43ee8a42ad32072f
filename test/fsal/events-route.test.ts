// GET /v1/volumes/{id}/events over real HTTP: the StorageEvents that real FsalService calls recorded, oldest first,
// paged and filtered, tenant-scoped (another tenant gets 404), bad query parameters 400.
import test from 'ava';
import Fastify, { type FastifyInstance } from 'fastify';
import { status } from '@grpc/grpc-js';
import { FsalServiceService as S } from '../../src/gen/orch/fsal/v1/fsal.js';
import { createJwtAuthenticator } from '../../src/auth/jwt-authenticator.ts';
import { installAuth } from '../../src/gateway/http/auth-hook.ts';
import { installErrorHandling } from '../../src/gateway/http/errors.ts';
import { installRequestSchemas } from '../../src/gateway/http/request-schemas.ts';
import { registerVolumeRoutes } from '../../src/gateway/http/volume-routes.ts';
import { fsalFixture, TENANT, type FsalFixture } from './support.ts';

let f: FsalFixture;
let app: FastifyInstance;
let base: string;

test.before(async () => {
  f = await fsalFixture();
  // As buildHttpApp makes it: the route schemas (which now do the query checks) attached, checked and never coerced.
  app = Fastify({ ajv: { customOptions: { coerceTypes: false, removeAdditional: false } } });
  installRequestSchemas(app);
  installErrorHandling(app);
  installAuth(app, createJwtAuthenticator({ jwks: f.idp.jwks, issuer: f.idp.issuer, audience: f.idp.audience }));
  await registerVolumeRoutes(app, f.volumes, f.db);
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});

test.after.always(async () => {
  await app?.close();
  await f?.close();
});

async function get(p: string, tenant = TENANT): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}${p}`, { headers: { authorization: `Bearer ${await f.token(tenant)}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

test('a volume lists the StorageEvents of its FSAL operations, paged and filtered; other tenants see nothing', async (t) => {
  const exec = await f.execution();
  const vol = await f.volume();
  await f.grant(exec, vol, 'read-write');
  const ids = { execution_id: exec, volume_id: vol };
  t.is((await f.rpc(S.mkDir, { ...ids, path: '/d', mode: 0 })).code, status.OK);
  t.is((await f.rpc(S.create, { ...ids, path: '/d/a.txt', mode: 0, exclusive: true })).code, status.OK);
  t.is((await f.rpc(S.write, { ...ids, path: '/d/a.txt', offset: 0, data: Buffer.from('hello') })).code, status.OK);
  t.is((await f.rpc(S.read, { ...ids, path: '/d/missing', offset: 0, length: 1 })).code, status.NOT_FOUND);

  await f.fsal.flushEvents();
  const all = await get(`/v1/volumes/${vol}/events`);
  t.is(all.status, 200, JSON.stringify(all.body));
  const events = all.body.events as { operation: string; path: string; status: string; bytes: number }[];
  t.deepEqual(events.map((e) => e.operation), ['mkdir', 'create', 'write', 'read']);
  t.is(all.body.count, 4);
  t.is(events[2]!.bytes, 5);
  t.not(events[3]!.status, events[0]!.status, 'the refused read is recorded with its own status');

  const page = await get(`/v1/volumes/${vol}/events?limit=2&offset=1`);
  t.deepEqual((page.body.events as { operation: string }[]).map((e) => e.operation), ['create', 'write']);
  t.like(page.body, { count: 4, limit: 2, offset: 1 });

  const writes = await get(`/v1/volumes/${vol}/events?operation=write`);
  t.deepEqual((writes.body.events as { operation: string }[]).map((e) => e.operation), ['write']);

  t.is((await get(`/v1/volumes/${vol}/events`, 'globex')).status, 404);
  t.is((await get(`/v1/volumes/${vol}/events?limit=0`)).status, 400);
  t.is((await get(`/v1/volumes/${vol}/events?limit=201`)).status, 400);
  t.is((await get(`/v1/volumes/${vol}/events?operation=chmod`)).status, 400);
  t.is((await get(`/v1/volumes/${vol}/events?execution_id=nope`)).status, 400);
});
