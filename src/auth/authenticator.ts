// The node's authenticator from its config: the identity provider of `auth` (JWKS file or URL), or, with no
// `auth` section, the dev identity under the data dir.
import type { NodeConfig } from '../config/types.ts';
import { ensureDevIdentity } from './dev-identity.ts';
import { createJwtAuthenticator } from './jwt-authenticator.ts';
import type { Authenticator } from './principal.ts';

export async function createAuthenticator(config: NodeConfig): Promise<Authenticator> {
  const auth = config.auth;
  if (auth) {
    return createJwtAuthenticator({
      ...(auth.jwks_file !== undefined ? { jwksFile: auth.jwks_file } : {}),
      ...(auth.jwks_url !== undefined ? { jwksUrl: auth.jwks_url } : {}),
      ...(auth.issuer !== undefined ? { issuer: auth.issuer } : {}),
      ...(auth.audience !== undefined ? { audience: auth.audience } : {}),
      ...(auth.clock_tolerance_seconds !== undefined ? { clockToleranceSec: auth.clock_tolerance_seconds } : {}),
    });
  }
  const dev = await ensureDevIdentity(config.dataDir);
  return createJwtAuthenticator({ jwks: dev.jwks, issuer: dev.issuer, audience: dev.audience });
}
