// Request parsing shared by the manifest deploy routes (agents, workflows) and other routes with boolean flags:
// YAML body types, boolean query/body flags, a scope from a fixed list, the two deploy body forms, the caller as a
// registry viewer, and manifest errors answered as 422 with their list.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { Role } from '../../auth/principal.ts';
import { principalOf } from './auth-hook.ts';
import { MANIFEST_LIMITS } from '../../agents/manifest/yaml-limits.ts';
import type { RequestOf } from './request-schemas.ts';

/** A deploy's body and query string as their route schemas validated them (request-schemas.ts). */
export type DeployBody = RequestOf<'POST /v1/agents'>['Body'];
export type DeployQuery = RequestOf<'POST /v1/agents'>['Querystring'];

/** A boolean from JSON or a query string (`true`, `1`, empty = true; `false`, `0` = false); absent = false. */
export function flag(v: unknown, name: string): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === 'boolean') return v;
  if (v === 'true' || v === '1' || v === '') return true;
  if (v === 'false' || v === '0') return false;
  throw new OrchError(Errors.BAD_REQUEST, `${name} must be a boolean`);
}

/** A scope named by the caller, one of `scopes`; absent = undefined. */
export function scopeOf<S extends string>(v: unknown, scopes: readonly S[]): S | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string' && (scopes as readonly string[]).includes(v)) return v as S;
  throw new OrchError(Errors.BAD_REQUEST, `scope must be one of ${scopes.join(', ')}`);
}

/**
 * The manifest text and options from either body form: the YAML itself (options in the query) or JSON
 * `{manifest_yaml, force?, scope?}` (options in the body, else the query); the route schema has checked the JSON
 * form. `shape` is the sentence an absent body gets (no Content-Type, so neither form).
 */
export function deployInput<S extends string>(body: DeployBody, query: DeployQuery, scopes: readonly S[], shape: string): { yaml: string; force: boolean; scope?: S } {
  if (typeof body === 'string') {
    const scope = scopeOf(query.scope, scopes);
    return { yaml: boundedManifest(body), force: flag(query.force, 'force'), ...(scope ? { scope } : {}) };
  }
  if (body === undefined || body === null) throw new OrchError(Errors.BAD_REQUEST, shape);
  const b = body;
  const scope = scopeOf(b.scope ?? query.scope, scopes);
  return { yaml: boundedManifest(b.manifest_yaml), force: flag(b.force ?? query.force, 'force'), ...(scope ? { scope } : {}) };
}

/** A manifest over the size limit is 413 here, before anything parses it (the parser would answer 422). */
function boundedManifest(yaml: string): string {
  const bytes = Buffer.byteLength(yaml, 'utf8');
  if (bytes > MANIFEST_LIMITS.maxBytes) {
    throw new OrchError(Errors.PAYLOAD_TOO_LARGE, `manifest is ${bytes} bytes; at most ${MANIFEST_LIMITS.maxBytes} are accepted`);
  }
  return yaml;
}

/** The caller of a registry route: its tenant, and who it is for scope rules (subject and roles). */
export function viewerOf(request: FastifyRequest): { tenant: string; viewer: { subject: string; roles: readonly Role[] } } {
  const p = principalOf(request);
  return { tenant: p.tenantId, viewer: { subject: p.subject, roles: p.roles } };
}

/**
 * Runs `fn`, answering an error of the registry's `invalid` class as 422 with its `errors` list (the shared handler
 * would put them in `details`).
 */
export async function manifestErrors<T>(
  reply: FastifyReply,
  invalid: abstract new (...args: never[]) => Error & { errors: unknown[] },
  fn: () => Promise<T>,
): Promise<T | FastifyReply> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof invalid) return reply.status(422).send({ error: err.message, errors: err.errors });
    throw err;
  }
}
