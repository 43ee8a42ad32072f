// request.log is made when a request writes a line, not for every request (src/gateway/http/lazy-request-logger.ts,
// issue 16): at the node's level `warn` a request that logs nothing makes no pino child (fastify's default made one
// per request: its bindings serialized through the redaction, ~9 kB of garbage); one that logs writes the same line,
// bound to its request id, as before.
import test from 'ava';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { buildHttpApp } from '../../src/gateway/http/app.ts';
import { createJwtAuthenticator } from '../../src/auth/jwt-authenticator.ts';
import { openDb } from '../../src/storage/open.ts';
import { ClusterService } from '../../src/cluster/service.ts';
import { createLogger, silentLogger } from '../../src/logging/logger.ts';
import { makeTestIdp } from '../support/jwks.ts';

async function serve(t: import('ava').ExecutionContext, level: string): Promise<{ base: string; file: string; flush: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-reqlog-'));
  const idp = await makeTestIdp();
  const db = await openDb({ dataDir: dir }, silentLogger());
  const file = path.join(dir, 'log.jsonl');
  const logger = createLogger({ level, destination: file });
  const app = await buildHttpApp({
    logger,
    db,
    authenticator: createJwtAuthenticator({ jwksFile: idp.jwksFile, issuer: idp.issuer, audience: idp.audience }),
    cluster: new ClusterService(db),
    isShuttingDown: () => false,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(async () => {
    await app.close();
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });
  const flush = (): Promise<void> => new Promise((resolve, reject) => logger.flush((err) => (err ? reject(err) : resolve())));
  return { base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`, file, flush };
}

/** Counts pino children made (patched on the prototype every pino logger shares). */
function countChildren(t: import('ava').ExecutionContext): { n: number } {
  const counter = { n: 0 };
  // pino() makes each logger from Object.create(its shared prototype): child() is on that prototype.
  const proto = Object.getPrototypeOf(Object.getPrototypeOf(pino({ level: 'silent' }))) as { child: (...a: unknown[]) => unknown };
  const child = proto.child;
  proto.child = function (this: unknown, ...a: unknown[]) {
    counter.n++;
    return child.apply(this, a);
  };
  t.teardown(() => {
    proto.child = child;
  });
  return counter;
}

test.serial('at level warn, requests that log nothing make no child logger', async (t) => {
  const s = await serve(t, 'warn');
  const children = countChildren(t);
  for (let i = 0; i < 5; i++) t.is((await fetch(`${s.base}/health`)).status, 200);
  t.is((await fetch(`${s.base}/v1/agents`)).status, 401, 'an error answered (no token) logs nothing at warn either');
  t.is(children.n, 0);
});

test.serial('at level info, each request line carries its own request id', async (t) => {
  const s = await serve(t, 'info');
  const ids = ['req-a', 'req-b'];
  for (const id of ids) t.is((await fetch(`${s.base}/health`, { headers: { 'x-request-id': id } })).status, 200);
  await s.flush();
  const lines = (await readFile(s.file, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const requests = lines.filter((l) => l.msg === 'request');
  t.deepEqual(requests.map((l) => l.reqId), ids);
  t.deepEqual(requests.map((l) => [l.component, l.url, l.status]), ids.map(() => ['http', '/health', 200]));
});
