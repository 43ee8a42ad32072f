// Bearer auth for everything under /v1 except the routes the seed leaves open (webhooks use HMAC, the dispatch
// gateway is internal). The resolved Principal is put on the request for handlers.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Authenticator, Principal } from '../../auth/principal.ts';
import { Errors, OrchError } from '../../errors/catalog.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

/** Paths under /v1 that do not take a bearer token. */
const OPEN_PREFIXES = ['/v1/webhooks/', '/v1/dispatch-gateway', '/v1/seal/', '/v1/invoke'];

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function bearerFromHeader(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(value);
  return m?.[1];
}

export function installAuth(app: FastifyInstance, authenticator: Authenticator): void {
  app.addHook('onRequest', async (request) => {
    const path = request.url.split('?')[0] ?? '';
    if (!path.startsWith('/v1/') && path !== '/v1') return;
    if (OPEN_PREFIXES.some((p) => path.startsWith(p))) return;
    const token = bearerFromHeader(header(request, 'authorization'));
    // A browser cannot set headers on a WebSocket: the live feed then takes the token as its first message.
    if (!token && path === '/v1/ws') return;
    if (!token) throw new OrchError(Errors.UNAUTHENTICATED, 'missing bearer token');
    request.principal = await authenticator.authenticate(token, header(request, 'x-tenant-id'));
  });
}

/** The principal of an authenticated route; a route reached without one is a wiring bug. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new OrchError(Errors.UNAUTHENTICATED, 'not authenticated');
  return request.principal;
}
