// The bearer token on the FSAL gRPC path (the FUSE daemon sends the same token on every call): the node's
// authenticator remembers a verified token (src/auth/jwt-authenticator.ts) rather than verifying its RS256 signature
// on every call, but never past the token's exp, and for a JWKS file never past its 1 s recheck period, so a token
// whose key is removed (revoked) is refused within that bound. Through the real runtime gRPC server and FsalService.
import test from 'ava';
import { writeFile } from 'node:fs/promises';
import { credentials, Metadata, status } from '@grpc/grpc-js';
import { createJwtAuthenticator } from '../../src/auth/jwt-authenticator.ts';
import { fsalHandlers } from '../../src/gateway/grpc/fsal-handlers.ts';
import { createRuntimeServer } from '../../src/gateway/grpc/runtime-server.ts';
import { startGrpcServer, type RunningGrpcServer } from '../../src/gateway/grpc/start.ts';
import { FsalServiceClient, FsalServiceService as S } from '../../src/gen/orch/fsal/v1/fsal.js';
import { silentLogger } from '../../src/logging/logger.ts';
import { call } from '../grpc/helpers.ts';
import { makeTestIdp, type TestIdp } from '../support/jwks.ts';
import { fsalFixture, TENANT, type FsalFixture } from './support.ts';

let f: FsalFixture;
let idp: TestIdp;
let server: RunningGrpcServer;
let client: InstanceType<typeof FsalServiceClient>;
// Serial: the revocation test rewrites the JWKS file the other test's token is signed for.

test.before(async () => {
  f = await fsalFixture();
  idp = await makeTestIdp();
  // The node's authenticator as createAuthenticator makes it for `auth.jwks_file` (clock tolerance 0 to keep the test short).
  const authenticator = createJwtAuthenticator({ jwksFile: idp.jwksFile, issuer: idp.issuer, audience: idp.audience, clockToleranceSec: 0 });
  server = await startGrpcServer(createRuntimeServer({ fsal: fsalHandlers(f.fsal, silentLogger()), auth: { enabled: true, authenticator }, logger: silentLogger() }), '127.0.0.1', 0);
  client = new FsalServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
});

test.after.always(async () => {
  client?.close();
  await server?.close();
  await f?.close();
});

function bearer(token: string): Metadata {
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  return md;
}

async function ids() {
  const exec = await f.execution();
  const vol = await f.volume();
  await f.grant(exec, vol);
  return { execution_id: exec, volume_id: vol, path: '' };
}

test.serial('a remembered token is refused once it has expired', async (t) => {
  const req = await ids();
  const token = await idp.sign({ sub: 'user-fuse', tenant_id: TENANT }, { ttlSeconds: 2 });
  t.is((await call(client, S.getAttr, req, bearer(token))).code, status.OK);
  t.is((await call(client, S.getAttr, req, bearer(token))).code, status.OK, 'again, the verification remembered');
  await new Promise((r) => setTimeout(r, 2200));
  const late = await call(client, S.getAttr, req, bearer(token));
  t.is(late.code, status.UNAUTHENTICATED, late.details);
  t.regex(late.details, /expired/);
});

test.serial('a token whose key is removed from the JWKS file (revoked) is refused within the 1 s recheck bound, remembered or not', async (t) => {
  const req = await ids();
  const token = await idp.sign({ sub: 'user-fuse', tenant_id: TENANT });
  for (let i = 0; i < 5; i++) t.is((await call(client, S.getAttr, req, bearer(token))).code, status.OK);
  const next = await makeTestIdp();
  const revokedAt = Date.now();
  await writeFile(idp.jwksFile, JSON.stringify({ keys: next.jwks.keys }));
  let refusedAt: number | undefined;
  while (refusedAt === undefined && Date.now() - revokedAt < 5000) {
    const out = await call(client, S.getAttr, req, bearer(token));
    if (out.code === status.UNAUTHENTICATED) refusedAt = Date.now();
    else t.is(out.code, status.OK);
    await new Promise((r) => setTimeout(r, 50));
  }
  t.not(refusedAt, undefined, 'refused after the key was removed');
  // 1 s of remembering plus the file's recheck; generous for a loaded machine.
  t.true(refusedAt! - revokedAt < 3500, `refused ${refusedAt! - revokedAt} ms after the removal`);
});
