// A route test's HTTP server and client: a Fastify app assembled as app.ts does it (error handling, JWT auth against
// a test identity provider, the routes under test, then the 501 placeholders) listening on loopback, and a fetch
// helper that sends a bearer token and a JSON or YAML body and parses a JSON answer.
import Fastify, { type FastifyInstance } from 'fastify';
import { createJwtAuthenticator } from '../../src/auth/jwt-authenticator.ts';
import { installAuth } from '../../src/gateway/http/auth-hook.ts';
import { installErrorHandling } from '../../src/gateway/http/errors.ts';
import { installRequestSchemas } from '../../src/gateway/http/request-schemas.ts';
import { registerUnimplementedRoutes } from '../../src/gateway/http/unimplemented.ts';
import type { TestIdp } from './jwks.ts';

export interface AuthedApp {
  app: FastifyInstance;
  /** http://127.0.0.1:<port> */
  base: string;
}

export async function startAuthedApp(idp: TestIdp, register: (app: FastifyInstance) => Promise<void> | void): Promise<AuthedApp> {
  // As buildHttpApp makes it: the route schemas attached as routes are registered, checked and never coerced.
  const app = Fastify({ ajv: { customOptions: { coerceTypes: false, removeAdditional: false } } });
  installRequestSchemas(app);
  installErrorHandling(app);
  installAuth(app, createJwtAuthenticator({ jwksFile: idp.jwksFile, issuer: idp.issuer, audience: idp.audience }));
  await register(app);
  // As app.ts does: the placeholders skip routes that exist, so ours must be registered by now.
  registerUnimplementedRoutes(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` };
}

export interface Res {
  status: number;
  text: string;
  body: Record<string, unknown>;
}

export interface CallOptions {
  token?: string;
  json?: unknown;
  yaml?: string;
  /** The content type of a `yaml` body (application/yaml unless given). */
  contentType?: string;
}

export async function httpCall(base: string, method: string, p: string, opts: CallOptions = {}): Promise<Res> {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.yaml !== undefined) {
    headers['content-type'] = opts.contentType ?? 'application/yaml';
    body = opts.yaml;
  }
  const res = await fetch(`${base}${p}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  return { status: res.status, text, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}
