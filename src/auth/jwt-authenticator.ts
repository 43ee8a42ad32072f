// Bearer JWT verification against a JWKS (file, URL or in memory) and Principal resolution. One instance per
// node, shared by HTTP and gRPC.
import { jwtVerify, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
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
}

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
  return {
    async authenticate(token: string | undefined, tenantHeader: string | undefined): Promise<Principal> {
      if (!token) throw new OrchError(Errors.UNAUTHENTICATED, 'missing bearer token');
      let payload;
      try {
        ({ payload } = await jwtVerify(token, getKey, verifyOptions));
      } catch (err) {
        throw toAuthError(err);
      }
      const principal = principalFromClaims(payload, tenantHeader);
      return typeof payload.exp === 'number' ? { ...principal, expiresAt: payload.exp * 1000 } : principal;
    },
  };
}

function keySource(options: JwtAuthenticatorOptions): JWTVerifyGetKey {
  const given = [options.jwksFile, options.jwksUrl, options.jwks].filter((v) => v !== undefined).length;
  if (given !== 1) throw new OrchError(Errors.CONFIG_INVALID, 'authenticator needs exactly one of jwksFile, jwksUrl or jwks');
  if (options.jwksFile !== undefined) return fileKeys(options.jwksFile);
  if (options.jwksUrl !== undefined) return remoteKeys(options.jwksUrl);
  return localKeys(options.jwks as JSONWebKeySet);
}
