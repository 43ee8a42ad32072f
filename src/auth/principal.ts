// Who is calling, as the auth layer resolves it from a bearer token (CONTRACT.md, "Identity").

export type Role = 'operator' | 'tenant-admin' | 'user';

export const SYSTEM_TENANT = 'orch-system';

export interface Principal {
  /** The token's `sub`. */
  subject: string;
  username?: string;
  /** Roles from `realm_access.roles` that orch knows. */
  roles: Role[];
  /** The tenant this request acts in, after service-account delegation was applied. */
  tenantId: string;
  /** The tenant the token itself names (`tenant_id` claim), before delegation. */
  homeTenantId: string;
  isServiceAccount: boolean;
  /** True when `tenantId` came from X-Tenant-Id / x-tenant-id. */
  delegated: boolean;
  /** When the token stops being valid (its `exp`, ms since the epoch); long-lived sessions (the live feed) end then. */
  expiresAt?: number;
}

/** Who is looking at a registry (agents, workflow definitions): what decides which rows a listing shows. */
export interface Viewer {
  subject: string;
  roles?: readonly Role[];
}

/** Verifies bearer tokens. One instance per node, shared by HTTP and gRPC. */
export interface Authenticator {
  /**
   * Verifies `token` (signature, issuer, audience, expiry) and resolves the principal, applying the
   * `X-Tenant-Id` header value only when the token is a service account's. Throws OrchError UNAUTHENTICATED.
   */
  authenticate(token: string | undefined, tenantHeader: string | undefined): Promise<Principal>;
}
