// Header helpers for the transports (HTTP hook, gRPC interceptor): they only extract, never verify.

/** Header (HTTP) and metadata key (gRPC) through which a service account names the tenant it acts in. */
export const TENANT_HEADER = 'x-tenant-id';

/** The token of an `Authorization: Bearer <token>` value (scheme case-insensitive); anything else → undefined. */
export function bearerToken(authorizationHeader: string | undefined): string | undefined {
  if (!authorizationHeader) return undefined;
  const m = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(authorizationHeader);
  return m?.[1];
}
