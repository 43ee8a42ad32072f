// The dev identity's signing key on disk: <dataDir>/identity/dev-signing-key.json (private JWK, 0600) and
// jwks.json (its public half, 0600), in a 0700 directory. The first start creates them; every later start,
// and `orch token` in another process, loads the same key. Two processes racing on the first start agree on
// one key because the key file is published with link(2), which fails if the name exists: the loser discards
// its key and reads the winner's.
import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, copyFile, link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JSONWebKeySet, type JWK } from 'jose';
import { Errors, OrchError } from '../errors/catalog.ts';

export const DEV_ALG = 'RS256';
export const KEY_FILE = 'dev-signing-key.json';
export const JWKS_FILE = 'jwks.json';

export interface DevKeys {
  privateJwk: JWK & { kid: string };
  jwks: JSONWebKeySet;
}

export function identityDir(dataDir: string): string {
  return path.join(dataDir, 'identity');
}

export async function loadOrCreateDevKeys(dataDir: string): Promise<DevKeys> {
  const dir = identityDir(dataDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700).catch(() => undefined);
  const keyFile = path.join(dir, KEY_FILE);

  let privateJwk = await readKey(keyFile);
  if (!privateJwk) {
    await publishExclusive(keyFile, `${JSON.stringify(await generateKey())}\n`);
    // Whoever won the race, the file is now the truth.
    privateJwk = await readKey(keyFile);
    if (!privateJwk) throw new OrchError(Errors.INTERNAL, `dev identity key ${keyFile} vanished after it was written`);
  }
  const jwks: JSONWebKeySet = { keys: [publicHalf(privateJwk)] };
  await writeJwks(path.join(dir, JWKS_FILE), jwks);
  return { privateJwk, jwks };
}

async function generateKey(): Promise<JWK & { kid: string }> {
  const { privateKey } = await generateKeyPair(DEV_ALG, { extractable: true, modulusLength: 2048 });
  const jwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(publicHalf(jwk));
  return { ...jwk, kid, alg: DEV_ALG, use: 'sig' };
}

function publicHalf(jwk: JWK): JWK {
  const { kty, n, e, kid, alg, use } = jwk;
  return Object.fromEntries(Object.entries({ kty, n, e, kid, alg, use }).filter(([, v]) => v !== undefined)) as JWK;
}

/** The key, or undefined when there is none yet. A file that exists but stays unparsable is an error. */
async function readKey(file: string): Promise<(JWK & { kid: string }) | undefined> {
  // A racing process on a filesystem without hard links may be mid-copy: give it a moment.
  for (let attempt = 0; ; attempt++) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new OrchError(Errors.CONFIG_INVALID, `cannot read dev identity key ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, { cause: err });
    }
    const jwk = parseKey(text);
    if (jwk) {
      await chmod(file, 0o600).catch(() => undefined);
      return jwk;
    }
    if (attempt >= 20) throw new OrchError(Errors.CONFIG_INVALID, `dev identity key ${file} is corrupt; delete it to make a new identity`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function parseKey(text: string): (JWK & { kid: string }) | undefined {
  try {
    const jwk = JSON.parse(text) as JWK;
    if (jwk.kty === 'RSA' && typeof jwk.d === 'string' && typeof jwk.n === 'string' && typeof jwk.kid === 'string') return jwk as JWK & { kid: string };
  } catch {
    // fall through: incomplete or not JSON
  }
  return undefined;
}

/** Creates `file` with `content` (0600) unless it already exists; never overwrites. */
async function publishExclusive(file: string, content: string): Promise<void> {
  const tmp = `${file}.${process.pid}.${randomUUID()}.tmp`;
  await writeFile(tmp, content, { mode: 0o600, flag: 'wx' });
  try {
    await link(tmp, file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS' && code !== 'EXDEV') throw err;
    // No hard links here: an exclusive copy still never overwrites; readers retry a partial file.
    await copyFile(tmp, file, constants.COPYFILE_EXCL).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST') throw e;
    });
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
}

/** The public JWKS is derived from the key, so rewriting it is idempotent; temp + rename keeps it whole. */
async function writeJwks(file: string, jwks: JSONWebKeySet): Promise<void> {
  const content = `${JSON.stringify(jwks, null, 2)}\n`;
  const existing = await readFile(file, 'utf8').catch(() => undefined);
  if (existing === content) {
    await chmod(file, 0o600).catch(() => undefined);
    return;
  }
  const tmp = `${file}.${process.pid}.${randomUUID()}.tmp`;
  await writeFile(tmp, content, { mode: 0o600, flag: 'wx' });
  await rename(tmp, file);
}
