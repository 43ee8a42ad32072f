// Ed25519 verification for the envelopes every node and agent call carries (cluster SealNodeEnvelope, SEAL
// envelopes): libsodium's crypto_sign_verify_detached (sodium-native). It verifies a heartbeat-sized payload in about
// 46 µs where node:crypto (OpenSSL 3.0's EVP path, which sets up a context per call) takes about 79 µs on the same
// machine — on a controller absorbing 1,000 heartbeats/s that is 3% of a core (docs/BENCHMARKS.md, issue 7).
// libsodium is the stricter of the two: it also refuses small-order keys and non-canonical signatures.
// It is orch's only Ed25519 implementation (issue 19): keys, signatures and the SPKI PEM form are all made here, so
// neither OpenSSL's Ed25519 (node:crypto) nor @noble/curves is used any more (the heartbeat benchmark still
// measures OpenSSL's verify for comparison).
import sodium from 'sodium-native';

const KEY_BYTES = 32;
const SIGNATURE_BYTES = 64;

function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/** Whether `signature` is a valid Ed25519 signature of `data` by the raw 32-byte `publicKey`. Never throws. */
export function verifyEd25519(publicKey: Uint8Array, data: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== KEY_BYTES || signature.length !== SIGNATURE_BYTES) return false;
  try {
    return sodium.crypto_sign_verify_detached(asBuffer(signature), asBuffer(data), asBuffer(publicKey));
  } catch {
    return false;
  }
}

/**
 * Whether `publicKey` is an Ed25519 public key worth registering: 32 bytes, the canonical encoding of a point on the
 * curve, in the prime-order subgroup and not of small order (libsodium's crypto_core_ed25519_is_valid_point). A
 * small-order key (the all-zero encoding is one) lets signatures verify for many messages without a private key under
 * a lax verifier; every real key (a multiple of the base point) passes.
 */
export function isValidEd25519PublicKey(publicKey: Uint8Array): boolean {
  if (publicKey.length !== KEY_BYTES) return false;
  try {
    return sodium.crypto_core_ed25519_is_valid_point(asBuffer(publicKey));
  } catch {
    return false;
  }
}

/** A fresh 32-byte Ed25519 secret (seed), from libsodium's CSPRNG. */
export function randomEd25519Secret(): Uint8Array {
  const seed = Buffer.alloc(sodium.crypto_sign_SEEDBYTES);
  sodium.randombytes_buf(seed);
  return new Uint8Array(seed);
}

export interface Ed25519Signer {
  /** The raw 32-byte public key. */
  readonly publicKey: Uint8Array;
  /** The 64-byte detached signature of exactly `data`. */
  sign(data: Uint8Array): Uint8Array;
}

/** The key pair of a 32-byte secret (RFC 8032 seed) and a signer holding libsodium's 64-byte secret key. */
export function ed25519Signer(secret: Uint8Array): Ed25519Signer {
  if (secret.length !== sodium.crypto_sign_SEEDBYTES) throw new RangeError('an Ed25519 secret is 32 bytes');
  const publicKey = Buffer.alloc(sodium.crypto_sign_PUBLICKEYBYTES);
  const secretKey = Buffer.alloc(sodium.crypto_sign_SECRETKEYBYTES);
  sodium.crypto_sign_seed_keypair(publicKey, secretKey, asBuffer(secret));
  return {
    publicKey: new Uint8Array(publicKey),
    sign: (data) => {
      const signature = Buffer.alloc(SIGNATURE_BYTES);
      sodium.crypto_sign_detached(signature, asBuffer(data), secretKey);
      return new Uint8Array(signature);
    },
  };
}

// RFC 8410: the SubjectPublicKeyInfo of an Ed25519 key is always these 12 bytes (SEQUENCE, AlgorithmIdentifier with
// OID 1.3.101.112 and no parameters, BIT STRING header) followed by the raw 32-byte key.
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const PEM_BODY = /^-----BEGIN PUBLIC KEY-----\s*([A-Za-z0-9+/=\s]+?)\s*-----END PUBLIC KEY-----$/;

/** The SPKI PEM of a raw 32-byte public key (the gRPC attestation form). */
export function ed25519PublicKeyPem(publicKey: Uint8Array): string {
  const der = Buffer.concat([SPKI_PREFIX, asBuffer(publicKey)]).toString('base64');
  return `-----BEGIN PUBLIC KEY-----\n${der}\n-----END PUBLIC KEY-----\n`;
}

/**
 * The raw 32 bytes of an SPKI PEM public key: `{ raw }`, or `{ problem: 'pem' }` when the text is not a PEM public
 * key at all, `{ problem: 'algorithm' }` when it is one of another algorithm (RSA, P-256, …).
 */
export function ed25519RawFromPem(pem: string): { raw: Uint8Array } | { problem: 'pem' | 'algorithm' } {
  const body = PEM_BODY.exec(pem.trim())?.[1];
  if (body === undefined) return { problem: 'pem' };
  const der = Buffer.from(body.replace(/\s+/g, ''), 'base64');
  // A DER SEQUENCE that is not the Ed25519 SPKI is a key of some other algorithm.
  if (der.length < 2 || der[0] !== 0x30) return { problem: 'pem' };
  if (der.length !== SPKI_PREFIX.length + KEY_BYTES || !der.subarray(0, SPKI_PREFIX.length).equals(SPKI_PREFIX)) return { problem: 'algorithm' };
  return { raw: new Uint8Array(der.subarray(SPKI_PREFIX.length)) };
}
