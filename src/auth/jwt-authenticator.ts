// Bearer JWT verification against a JWKS (file, URL or in memory) and Principal resolution. One instance per
// node, shared by HTTP and gRPC.
//
// Verified tokens are remembered for a short while (issue 16: an RS256 verify was ~5 % of a node's CPU in the API
// race, a client sending the same bearer token on every call). A remembered token is taken only until its `exp` and
// for at most as long as the key source may go without noticing a key change: 1 s for a JWKS file (its recheck
// period), 30 s for a JWKS URL (jose refetches on an unknown kid at most that often and keeps keys 10 min anyway),
// 60 s for in-memory keys (they never change). Refused tokens are never remembered; the principal (tenant
// delegation from the header) is resolved from the remembered claims on every call.
import { jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { Errors, OrchError } from '../errors/catalog.ts';
import { principalFromClaims } from './claims.ts';
import { toAuthError } from './jwt-errors.ts';
import { fileKeys, localKeys, remoteKeys } from './key-sources.ts';
import type { Authenticator, Principal } from './principal.ts';

export interface JwtAuthenticatorOptions {
  /** A JWKS JSON file; read now, re-read when it changes. */
  jwksFile?: string;
  /** An identity provider's JWKS endpoint (Keycloak: <realm>/protocol/openid-connect/certs). */
  jwksUrl?: string;
  /** Keys given directly (dev identity). */
  jwks?: JSONWebKeySet;
  /** Expected `iss`; unchecked when absent. */
  issuer?: string;
  /** Expected `aud`; unchecked when absent. */
  audience?: string;
  /** Allowed clock skew for exp/nbf/iat, seconds (default 5). */
  clockToleranceSec?: number;
  /** How long a verified token is taken without verifying it again, ms (default per key source, above; 0: never). */
  verifiedTtlMs?: number;
}

/** At most this many verified tokens are remembered (the oldest is forgotten first). */
const VERIFIED_MAX = 10_000;

/** Asymmetric algorithms only: a JWKS of public keys must never be usable as an HMAC secret. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

export function createJwtAuthenticator(options: JwtAuthenticatorOptions): Authenticator {
  const getKey = keySource(options);
  const verifyOptions = {
    algorithms: ALGORITHMS,
    requiredClaims: ['exp'],
    clockTolerance: options.clockToleranceSec ?? 5,
    ...(options.issuer !== undefined ? { issuer: options.issuer } : {}),
    ...(options.audience !== undefined ? { audience: options.audience } : {}),
  };
  const ttl = options.verifiedTtlMs ?? (options.jwksFile !== undefined ? 1_000 : options.jwksUrl !== undefined ? 30_000 : 60_000);
  const verified = new Map<string, { payload: JWTPayload; until: number }>();
  return {
    async authenticate(token: string | undefined, tenantHeader: string | undefined): Promise<Principal> {
      if (!token) throw new OrchError(Errors.UNAUTHENTICATED, 'missing bearer token');
      const now = Date.now();
      let payload = verified.get(token);
      if (payload !== undefined && payload.until <= now) {
        verified.delete(token);
        payload = undefined;
      }
      if (payload === undefined) {
        let claims;
        try {
          ({ payload: claims } = await jwtVerify(token, getKey, verifyOptions));
        } catch (err) {
          throw toAuthError(err);
        }
        const principal = principalOf(claims, tenantHeader); // claims it refuses (no sub, bad tenant) are not remembered
        // exp is required (verifyOptions): remembered no longer than the token is valid, without clock tolerance.
        const until = Math.min(now + ttl, typeof claims.exp === 'number' ? claims.exp * 1000 : now);
        if (until > now) {
          if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value as string);
          verified.set(token, { payload: claims, until });
        }
        return principal;
      }
      return principalOf(payload.payload, tenantHeader);
    },
  };
}

function principalOf(payload: JWTPayload, tenantHeader: string | undefined): Principal {
  const principal = principalFromClaims(payload, tenantHeader);
  return typeof payload.exp === 'number' ? { ...principal, expiresAt: payload.exp * 1000 } : principal;
}

function keySource(options: JwtAuthenticatorOptions): JWTVerifyGetKey {
  const given = [options.jwksFile, options.jwksUrl, options.jwks].filter((v) => v !== undefined).length;
  if (given !== 1) throw new OrchError(Errors.CONFIG_INVALID, 'authenticator needs exactly one of jwksFile, jwksUrl or jwks');
  if (options.jwksFile !== undefined) return fileKeys(options.jwksFile);
  if (options.jwksUrl !== undefined) return remoteKeys(options.jwksUrl);
  return localKeys(options.jwks as JSONWebKeySet);
}
