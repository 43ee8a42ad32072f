// `spec.cluster.allowed_node_keys`: Ed25519 public keys given as base64 of the raw 32 bytes (what a worker logs at
// start, "node key") or as an SPKI PEM. Answers the canonical base64 the controller compares with an attesting key.
import { ed25519RawFromPem, isValidEd25519PublicKey } from '../util/ed25519.ts';
import { ConfigError } from './errors.ts';

export function parseNodeKey(text: string, key: string): string {
  const s = text.trim();
  let raw: Buffer;
  if (s.includes('-----BEGIN PUBLIC KEY-----')) {
    const r = ed25519RawFromPem(s);
    if (!('raw' in r)) throw new ConfigError(key, 'is not an Ed25519 public key PEM');
    raw = Buffer.from(r.raw);
  } else {
    if (!/^[A-Za-z0-9+/]{43}=$/.test(s)) throw new ConfigError(key, 'must be base64 of a 32-byte Ed25519 public key (44 characters) or a PEM');
    raw = Buffer.from(s, 'base64');
  }
  if (!isValidEd25519PublicKey(raw)) throw new ConfigError(key, 'is not a valid Ed25519 public key (not a curve point, or of small order)');
  return raw.toString('base64');
}
