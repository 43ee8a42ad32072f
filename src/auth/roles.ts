// Role checks for handlers. Roles are matched exactly (an operator is not implicitly a tenant-admin): a route
// lists every role it accepts, e.g. requireRole(p, 'operator', 'tenant-admin').
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Principal, Role } from './principal.ts';

export function hasRole(principal: Principal, ...roles: Role[]): boolean {
  return roles.some((r) => principal.roles.includes(r));
}

/** Throws OrchError FORBIDDEN (403) unless the principal has at least one of `roles`. */
export function requireRole(principal: Principal, ...roles: Role[]): void {
  if (roles.length === 0 || hasRole(principal, ...roles)) return;
  throw new OrchError(Errors.FORBIDDEN, `requires role ${roles.join(' or ')}`);
}
