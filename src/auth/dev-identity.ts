// Dev identity mode (no `auth` section): the node is its own token issuer, with a key under the data dir.
// `orch up` prints a token signed with it and `orch token` signs more; the authenticator of the same data dir
// accepts them and nobody else's. Requests without a valid token are still refused. See docs/IDENTITY.md.
import { randomUUID } from 'node:crypto';
import { importJWK, SignJWT, type JSONWebKeySet, type JWTPayload } from 'jose';
import { Errors, OrchError } from '../errors/catalog.ts';
import { SERVICE_ACCOUNT_PREFIX } from './claims.ts';
import { DEV_ALG, loadOrCreateDevKeys } from './dev-keys.ts';
import type { Role } from './principal.ts';
import { isTenantSlug } from './tenant.ts';

export const DEV_ISSUER = 'orch-dev';
export const DEV_AUDIENCE = 'orch';
export const DEV_SERVICE_ACCOUNT = `${SERVICE_ACCOUNT_PREFIX}orch-dev`;
export const DEV_USER = 'dev-user';
export const DEV_TOKEN_TTL_SECONDS = 12 * 3600;

export interface DevTokenRequest {
  /** tenant_id claim. Absent: no claim, so the home tenant is `orch-system`. */
  tenant?: string;
  /** Default `user` (no realm roles). */
  role?: Role;
  /** A service account: may act in another tenant with X-Tenant-Id; without it acts in `orch-system`. */
  serviceAccount?: boolean;
  /** `sub`; default the username (`dev-user` or `service-account-orch-dev`). */
  subject?: string;
  /** Lifetime; default 12 h. */
  ttlSeconds?: number;
}

export interface DevIdentity {
  jwks: JSONWebKeySet;
  issuer: typeof DEV_ISSUER;
  audience: typeof DEV_AUDIENCE;
  sign(request: DevTokenRequest): Promise<string>;
}

const ROLES: readonly Role[] = ['operator', 'tenant-admin', 'user'];

export async function ensureDevIdentity(dataDir: string): Promise<DevIdentity> {
  const { privateJwk, jwks } = await loadOrCreateDevKeys(dataDir);
  const key = await importJWK(privateJwk, DEV_ALG);
  return {
    jwks,
    issuer: DEV_ISSUER,
    audience: DEV_AUDIENCE,
    async sign(request: DevTokenRequest): Promise<string> {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT(devClaims(request))
        .setProtectedHeader({ alg: DEV_ALG, kid: privateJwk.kid, typ: 'JWT' })
        .setIssuer(DEV_ISSUER)
        .setAudience(DEV_AUDIENCE)
        .setIssuedAt(now)
        .setExpirationTime(now + ttlOf(request))
        .setJti(randomUUID())
        .sign(key);
    },
  };
}

/** The claims a Keycloak token of the same kind would carry, so dev mode exercises the real resolution path. */
export function devClaims(request: DevTokenRequest): JWTPayload {
  const role = request.role ?? 'user';
  if (!ROLES.includes(role)) throw new OrchError(Errors.BAD_REQUEST, `role must be one of ${ROLES.join(', ')}`);
  if (request.tenant !== undefined && !isTenantSlug(request.tenant)) {
    throw new OrchError(Errors.BAD_REQUEST, 'tenant must be a tenant slug (a-z, 0-9, "-", at most 63)');
  }
  const sa = request.serviceAccount === true;
  const username = sa ? DEV_SERVICE_ACCOUNT : DEV_USER;
  return {
    sub: request.subject ?? username,
    preferred_username: username,
    ...(request.tenant !== undefined ? { tenant_id: request.tenant } : {}),
    realm_access: { roles: role === 'user' ? [] : [role] },
    ...(sa ? { identity_type: 'service_account' } : {}),
  };
}

function ttlOf(request: DevTokenRequest): number {
  const ttl = request.ttlSeconds ?? DEV_TOKEN_TTL_SECONDS;
  if (!Number.isFinite(ttl) || ttl <= 0) throw new OrchError(Errors.BAD_REQUEST, 'ttlSeconds must be a positive number');
  return Math.ceil(ttl);
}
