// Verified JWT claims → Principal (CONTRACT.md "Identity", seed 000 "Tenant delegation"). Keycloak-style:
// roles in realm_access.roles, home tenant in tenant_id, service accounts by preferred_username prefix or
// identity_type. Only a service account may act in another tenant through X-Tenant-Id.
import type { JWTPayload } from 'jose';
import { Errors, OrchError } from '../errors/catalog.ts';
import { SYSTEM_TENANT, type Principal, type Role } from './principal.ts';
import { isTenantSlug } from './tenant.ts';

/** The realm roles orch gives meaning to; `user` is implied for everyone. */
const KNOWN_ROLES: readonly Role[] = ['operator', 'tenant-admin'];
export const SERVICE_ACCOUNT_PREFIX = 'service-account-';

export function principalFromClaims(payload: JWTPayload, tenantHeader: string | undefined): Principal {
  const subject = payload.sub;
  if (typeof subject !== 'string' || subject === '') throw new OrchError(Errors.UNAUTHENTICATED, 'invalid token: missing sub claim');
  const username = typeof payload.preferred_username === 'string' ? payload.preferred_username : undefined;

  const realm = payload.realm_access as { roles?: unknown } | undefined;
  const tokenRoles = Array.isArray(realm?.roles) ? realm.roles.filter((r): r is string => typeof r === 'string') : [];
  const roles: Role[] = [...KNOWN_ROLES.filter((r) => tokenRoles.includes(r)), 'user'];

  const claim = payload.tenant_id;
  if (claim !== undefined && claim !== null && !isTenantSlug(claim)) {
    // The IdP signed it, but a tenant we cannot name safely must not reach queries or logs.
    throw new OrchError(Errors.UNAUTHENTICATED, 'invalid token: tenant_id is not a tenant slug');
  }
  const homeTenantId = claim ?? SYSTEM_TENANT;

  const isServiceAccount = (username?.startsWith(SERVICE_ACCOUNT_PREFIX) ?? false) || payload.identity_type === 'service_account';
  const base = { subject, ...(username !== undefined ? { username } : {}), roles, homeTenantId, isServiceAccount };
  // Everyone else: the header is ignored, whatever it holds.
  if (!isServiceAccount) return { ...base, tenantId: homeTenantId, delegated: false };

  const requested = tenantHeader?.trim();
  if (!requested) return { ...base, tenantId: SYSTEM_TENANT, delegated: false };
  if (!isTenantSlug(requested)) throw new OrchError(Errors.BAD_REQUEST, 'invalid X-Tenant-Id: must be a tenant slug (a-z, 0-9, "-")');
  return { ...base, tenantId: requested, delegated: true };
}
