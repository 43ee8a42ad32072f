// GET /ui: the live dashboard (CONTRACT.md, docs/LIVE-FEED.md), static files built from ui/src by `npm run build:ui`
// and committed under ui/dist, so a clone serves it with no build step. The page holds no data of its own: it asks
// for a token and reads everything through /v1/ws and the /v1 API with it.
import { existsSync } from 'node:fs';
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
  await app.register(fastifyStatic, {
    root: dir,
    prefix: '/ui/',
    index: ['index.html'],
    // setHeaders owns cache-control: @fastify/static 9 writes its own default after setHeaders runs, so it is off.
    cacheControl: false,
    // Hashed asset names: cache them; index.html names them, so it is always revalidated.
    setHeaders: (res, file) => {
      res.setHeader('content-security-policy', CSP);
      res.setHeader('x-content-type-options', 'nosniff');
      res.setHeader('cache-control', file.endsWith('index.html') ? 'no-cache' : 'public, max-age=31536000, immutable');
    },
  });
  app.get('/ui', async (_request, reply) => reply.redirect('/ui/', 302));
}
