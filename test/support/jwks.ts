// A stand-in identity provider for tests: a real RSA key pair, its public JWKS written to a file in a temp dir
// (what `auth.jwks_file` points at), and a signer for Keycloak-style access tokens. Temp dirs are removed when
// the test process exits.
import { rmSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type JSONWebKeySet, type JWTPayload } from 'jose';

export interface SignOptions {
  /** Seconds from now until `exp` (negative: already expired); default 3600. */
  ttlSeconds?: number;
  /** Leave out `exp` entirely. */
  noExp?: boolean;
  issuer?: string;
  audience?: string;
  /** Override the header's kid (e.g. one the JWKS does not contain). */
  kid?: string;
}

export interface TestIdp {
  dir: string;
  jwksFile: string;
  jwks: JSONWebKeySet;
  issuer: string;
  audience: string;
  kid: string;
  sign(claims: JWTPayload, opts?: SignOptions): Promise<string>;
}

const dirs: string[] = [];
process.once('exit', () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

export async function makeTestIdp(options: { issuer?: string; audience?: string } = {}): Promise<TestIdp> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-idp-'));
  dirs.push(dir);
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const pub = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(pub);
  const jwks: JSONWebKeySet = { keys: [{ ...pub, kid, alg: 'RS256', use: 'sig' }] };
  const jwksFile = path.join(dir, 'jwks.json');
  await writeFile(jwksFile, JSON.stringify(jwks));
  const issuer = options.issuer ?? 'https://idp.test/realms/orch';
  const audience = options.audience ?? 'orch';

  return {
    dir,
    jwksFile,
    jwks,
    issuer,
    audience,
    kid,
    async sign(claims: JWTPayload, opts: SignOptions = {}): Promise<string> {
      const now = Math.floor(Date.now() / 1000);
      const jwt = new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: opts.kid ?? kid, typ: 'JWT' })
        .setIssuer(opts.issuer ?? issuer)
        .setAudience(opts.audience ?? audience)
        .setIssuedAt(now + Math.min(0, opts.ttlSeconds ?? 0) - 60);
      if (!opts.noExp) jwt.setExpirationTime(now + (opts.ttlSeconds ?? 3600));
      return jwt.sign(privateKey);
    },
  };
}
