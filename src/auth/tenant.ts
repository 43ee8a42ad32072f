// Tenant slugs: what `tenant_id` claims and X-Tenant-Id headers must look like (lower-case, DNS-label-like).
export const TENANT_SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;

export function isTenantSlug(value: unknown): value is string {
  return typeof value === 'string' && TENANT_SLUG.test(value);
}
