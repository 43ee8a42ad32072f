// GET /ui: the live dashboard (CONTRACT.md, docs/LIVE-FEED.md), static files built from ui/src by `npm run build:ui`
// and committed under ui/dist, so a clone serves it with no build step. The page holds no data of its own: it asks
// for a token and reads everything through /v1/ws and the /v1 API with it.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

export const DEFAULT_UI_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../ui/dist');

const CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self' ws: wss:; frame-ancestors 'none'";

export async function registerDashboard(app: FastifyInstance, dir = DEFAULT_UI_DIR): Promise<void> {
  if (!existsSync(path.join(dir, 'index.html'))) {
    app.get('/ui', async (_request, reply) => reply.status(503).send({ error: 'the dashboard is not built: run npm run build:ui' }));
    return;
  }
  // The headers are set in an onSend hook of this scope rather than by @fastify/static's setHeaders, whose response
  // object changed between majors (a raw ServerResponse in 9, a reply-like one in 10) and which writes its own
  // cache-control after setHeaders runs; cacheControl is off so ours is the only one.
  await app.register(async (scope) => {
    scope.addHook('onSend', async (request, reply, payload) => {
      reply.header('content-security-policy', CSP);
      reply.header('x-content-type-options', 'nosniff');
      if (reply.statusCode < 400) reply.header('cache-control', cacheControlFor(request.url));
      return payload;
    });
    // schemaHide false: the dashboard's files are listed in /openapi.json like every other route (openapi.ts).
    await scope.register(fastifyStatic, { root: dir, prefix: '/ui/', index: ['index.html'], cacheControl: false, schemaHide: false });
  });
  app.get('/ui', async (_request, reply) => reply.redirect('/ui/', 302));
  // Browsers ask for /favicon.ico at the root whatever the page links; the built dashboard carries one (ui/public).
  const icon = path.join(dir, 'favicon.ico');
  if (existsSync(icon)) {
    const bytes = readFileSync(icon);
    app.get('/favicon.ico', async (_request, reply) =>
      reply.header('content-type', 'image/x-icon').header('cache-control', 'public, max-age=86400').header('x-content-type-options', 'nosniff').send(bytes),
    );
  }
}

// Hashed asset names: cache them for good; the index names them, so it is always revalidated.
function cacheControlFor(url: string): string {
  const pathname = url.split('?')[0] ?? url;
  return pathname.endsWith('/') || pathname.endsWith('.html') ? 'no-cache' : 'public, max-age=31536000, immutable';
}
