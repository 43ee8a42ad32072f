// Ed25519 verification for the envelopes every node and agent call carries (cluster SealNodeEnvelope, SEAL
// envelopes): libsodium's crypto_sign_verify_detached (sodium-native). It verifies a heartbeat-sized payload in about
// 46 µs where node:crypto (OpenSSL 3.0's EVP path, which sets up a context per call) takes about 79 µs on the same
// machine — on a controller absorbing 1,000 heartbeats/s that is 3% of a core (docs/BENCHMARKS.md, issue 7).
// libsodium is the stricter of the two: it also refuses small-order keys and non-canonical signatures.
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
