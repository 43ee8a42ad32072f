// The static side of /ui (src/gateway/http/dashboard.ts) with the pinned @fastify/static: index at /ui/, a redirect
// from /ui, and the headers setHeaders adds (CSP, nosniff, caching by file kind). A change of @fastify/static major
// changed setHeaders' response object once; this catches the next one.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import Fastify from 'fastify';
import { registerDashboard } from '../../src/gateway/http/dashboard.ts';

test('the dashboard serves its index and assets with CSP, nosniff and per-kind caching', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-ui-static-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, 'index.html'), '<!doctype html><title>orch</title>');
  await mkdir(path.join(dir, 'assets'));
  await writeFile(path.join(dir, 'assets', 'app-1a2b.js'), 'console.log(1)');
  const app = Fastify();
  t.teardown(() => app.close());
  await registerDashboard(app, dir);

  const bare = await app.inject({ method: 'GET', url: '/ui' });
  t.is(bare.statusCode, 302);
  t.is(bare.headers.location, '/ui/');

  const index = await app.inject({ method: 'GET', url: '/ui/' });
  t.is(index.statusCode, 200);
  t.regex(index.body, /<title>orch<\/title>/);
  t.regex(String(index.headers['content-security-policy']), /default-src 'self'/);
  t.is(index.headers['x-content-type-options'], 'nosniff');
  t.is(index.headers['cache-control'], 'no-cache');

  const asset = await app.inject({ method: 'GET', url: '/ui/assets/app-1a2b.js' });
  t.is(asset.statusCode, 200);
  t.is(asset.body, 'console.log(1)');
  t.is(asset.headers['cache-control'], 'public, max-age=31536000, immutable');
  t.is(asset.headers['x-content-type-options'], 'nosniff');

  const missing = await app.inject({ method: 'GET', url: '/ui/nope.js' });
  t.is(missing.statusCode, 404);
});

test('without a built dashboard /ui says how to build it (503)', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-ui-none-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const app = Fastify();
  t.teardown(() => app.close());
  await registerDashboard(app, dir);
  const res = await app.inject({ method: 'GET', url: '/ui' });
  t.is(res.statusCode, 503);
  t.regex(res.json<{ error: string }>().error, /build:ui/);
});

test('the built dashboard answers /favicon.ico (an icon, not a 404) and links it from the page', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-ui-icon-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, 'index.html'), '<!doctype html><title>orch</title>');
  await writeFile(path.join(dir, 'favicon.ico'), Buffer.from([0, 0, 1, 0, 1, 0]));
  const app = Fastify();
  t.teardown(() => app.close());
  await registerDashboard(app, dir);
  const icon = await app.inject({ method: 'GET', url: '/favicon.ico' });
  t.is(icon.statusCode, 200);
  t.is(icon.headers['content-type'], 'image/x-icon');
  t.deepEqual(icon.rawPayload, Buffer.from([0, 0, 1, 0, 1, 0]));
  t.is((await app.inject({ method: 'GET', url: '/ui/favicon.ico' })).statusCode, 200);

  // The committed build carries the icon and the index links it.
  const real = Fastify();
  t.teardown(() => real.close());
  await registerDashboard(real);
  const built = await real.inject({ method: 'GET', url: '/favicon.ico' });
  t.is(built.statusCode, 200);
  t.is(built.rawPayload.readUInt16LE(2), 1, 'an ICO (type 1)');
  t.regex((await real.inject({ method: 'GET', url: '/ui/' })).body, /<link rel="icon" href="\/ui\/favicon.ico"/);
});
