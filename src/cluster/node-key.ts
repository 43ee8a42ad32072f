// The node's Ed25519 key: made on the first start, kept at <dataDir>/identity/node-key.json (0600, in a 0700
// directory) so that a restarted node attests with the same key — the controller pins a node id to the key it first
// registered with (docs/CLUSTER.md "Trust"). Signing and every verification (envelopes and the attestation
// challenge, src/cluster/authority.ts) are libsodium's (src/util/ed25519.ts).
import { randomUUID } from 'node:crypto';
import { chmod, link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Errors, OrchError } from '../errors/catalog.ts';
import { ed25519PublicKeyPem, ed25519RawFromPem, ed25519Signer, randomEd25519Secret } from '../util/ed25519.ts';

export const NODE_KEY_FILE = 'node-key.json';

export interface NodeKey {
  /** 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array;
  /** SPKI PEM of the public key (AttestNodeRequest.public_key_pem). */
  readonly publicKeyPem: string;
  /** Ed25519 signature (64 bytes) over exactly `data`. */
  sign(data: Uint8Array): Uint8Array;
}

/** A key from its 32-byte secret (tests and the benchmark make many in memory). */
export function nodeKeyFromSecret(secret: Uint8Array): NodeKey {
  if (secret.length !== 32) throw new OrchError(Errors.CONFIG_INVALID, 'an Ed25519 node key is 32 bytes');
  const signer = ed25519Signer(secret);
  return { publicKey: signer.publicKey, publicKeyPem: ed25519PublicKeyPem(signer.publicKey), sign: signer.sign };
}

export function generateNodeKey(): NodeKey {
  return nodeKeyFromSecret(randomEd25519Secret());
}

/** The node's persistent key; two processes racing on the first start agree on one key (link(2) publishes it). */
export async function loadOrCreateNodeKey(dataDir: string): Promise<NodeKey> {
  const dir = path.join(dataDir, 'identity');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700).catch(() => undefined);
  const file = path.join(dir, NODE_KEY_FILE);
  let secret = await readSecret(file);
  if (!secret) {
    const fresh = randomEd25519Secret();
    const tmp = `${file}.${process.pid}.${randomUUID()}.tmp`;
    await writeFile(tmp, `${JSON.stringify({ alg: 'Ed25519', d: Buffer.from(fresh).toString('base64') })}\n`, { mode: 0o600, flag: 'wx' });
    try {
      await link(tmp, file).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
    } finally {
      await unlink(tmp).catch(() => undefined);
    }
    secret = await readSecret(file);
    if (!secret) throw new OrchError(Errors.INTERNAL, `node key ${file} vanished after it was written`);
  }
  return nodeKeyFromSecret(secret);
}

async function readSecret(file: string): Promise<Uint8Array | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new OrchError(Errors.CONFIG_INVALID, `cannot read node key ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, { cause: err });
  }
  try {
    const v = JSON.parse(text) as { d?: unknown };
    const d = typeof v.d === 'string' ? Buffer.from(v.d, 'base64') : undefined;
    if (d && d.length === 32) return new Uint8Array(d);
  } catch {
    // fall through
  }
  throw new OrchError(Errors.CONFIG_INVALID, `node key ${file} is corrupt; delete it to make a new node identity (the controller must forget the node first)`);
}

/** The raw 32 bytes of an Ed25519 SPKI PEM; throws BAD_REQUEST for anything else. */
export function rawPublicKeyFromPem(pem: string): Uint8Array {
  const r = ed25519RawFromPem(pem);
  if ('raw' in r) return r.raw;
  throw new OrchError(Errors.BAD_REQUEST, r.problem === 'pem' ? 'public_key_pem is not a valid PEM public key' : 'public_key_pem is not an Ed25519 key');
}
