// jose failures → short, fixed UNAUTHENTICATED messages. Messages never contain the token or claim values:
// they end up in response bodies and logs.
import { Errors, OrchError } from '../errors/catalog.ts';

const BY_CODE: Record<string, string> = {
  ERR_JWT_EXPIRED: 'invalid token: expired',
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: 'invalid token: signature verification failed',
  ERR_JWKS_NO_MATCHING_KEY: 'invalid token: no matching signing key',
  ERR_JOSE_ALG_NOT_ALLOWED: 'invalid token: signing algorithm not allowed',
  ERR_JOSE_NOT_SUPPORTED: 'invalid token: unsupported algorithm or key',
  ERR_JWS_INVALID: 'invalid token: malformed',
  ERR_JWT_INVALID: 'invalid token: malformed',
};

const BY_CLAIM: Record<string, string> = {
  iss: 'invalid token: wrong issuer',
  aud: 'invalid token: wrong audience',
  nbf: 'invalid token: not yet valid',
  iat: 'invalid token: bad issued-at time',
  exp: 'invalid token: bad expiry',
};

export function toAuthError(err: unknown): OrchError {
  // Our own errors (a 503 from the key source, a 400 for the header) pass through unchanged.
  if (err instanceof OrchError) return err;
  const e = err as { code?: unknown; claim?: unknown; reason?: unknown };
  if (e.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') {
    const claim = String(e.claim);
    const msg = e.reason === 'missing' ? `invalid token: missing ${claim} claim` : (BY_CLAIM[claim] ?? `invalid token: ${claim} claim check failed`);
    return new OrchError(Errors.UNAUTHENTICATED, msg, { cause: err });
  }
  const msg = typeof e.code === 'string' ? BY_CODE[e.code] : undefined;
  return new OrchError(Errors.UNAUTHENTICATED, msg ?? 'invalid token', { cause: err });
}
