// Where verification keys come from: an in-memory JWKS, a JWKS file (re-read when it changes, so keys can be
// rotated without a restart), or an identity provider's JWKS URL (jose caches and refreshes it).
import { readFileSync, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createLocalJWKSet, createRemoteJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { Errors, OrchError, RetryableError } from '../errors/catalog.ts';

/** How often at most the JWKS file is stat'ed for changes. */
const FILE_RECHECK_MS = 1000;

export function localKeys(jwks: JSONWebKeySet): JWTVerifyGetKey {
  return createLocalJWKSet(checkJwks(jwks, 'jwks'));
}

/** Reads the file now (a missing or broken file fails start-up), then picks up changes on later calls. */
export function fileKeys(file: string): JWTVerifyGetKey {
  let current = createLocalJWKSet(readJwksFile(file));
  let stamp = stampOf(statSync(file));
  let checkedAt = Date.now();
  let pending: Promise<void> | undefined;

  const recheck = async (): Promise<void> => {
    checkedAt = Date.now();
    try {
      const s = stampOf(await stat(file));
      if (s === stamp) return;
      current = createLocalJWKSet(readJwksFile(file));
      stamp = s;
    } catch {
      // A file caught mid-write or briefly missing keeps the previous keys; the next recheck tries again.
    }
  };

  return async (header, token) => {
    if (Date.now() - checkedAt >= FILE_RECHECK_MS) {
      pending ??= recheck().finally(() => (pending = undefined));
      await pending;
    }
    return current(header, token);
  };
}

export function remoteKeys(url: string): JWTVerifyGetKey {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw new OrchError(Errors.CONFIG_INVALID, `auth.jwks_url is not a URL`, { cause });
  }
  const remote = createRemoteJWKSet(parsed, { timeoutDuration: 5000, cooldownDuration: 30_000, cacheMaxAge: 600_000 });
  return async (header, token) => {
    try {
      return await remote(header, token);
    } catch (err) {
      // Unreachable IdP or a broken JWKS answer is our outage (503), not the caller's bad token (401).
      const code = (err as { code?: unknown }).code;
      if (code === 'ERR_JWKS_TIMEOUT' || code === 'ERR_JWKS_INVALID' || code === 'ERR_JOSE_GENERIC' || code === undefined) {
        throw new RetryableError('identity provider keys are unavailable', { cause: err });
      }
      throw err;
    }
  };
}

function stampOf(s: { mtimeMs: number; size: number; ino: number }): string {
  return `${s.mtimeMs}:${s.size}:${s.ino}`;
}

function readJwksFile(file: string): JSONWebKeySet {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    throw new OrchError(Errors.CONFIG_INVALID, `cannot read JWKS file ${file}: ${(cause as NodeJS.ErrnoException).code ?? 'error'}`, { cause });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new OrchError(Errors.CONFIG_INVALID, `JWKS file ${file} is not JSON`, { cause });
  }
  return checkJwks(parsed, `JWKS file ${file}`);
}

function checkJwks(value: unknown, what: string): JSONWebKeySet {
  const keys = (value as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0) throw new OrchError(Errors.CONFIG_INVALID, `${what} has no "keys"`);
  return value as JSONWebKeySet;
}
