// orch's one Ed25519 implementation (libsodium, src/util/ed25519.ts; issue 19): its keys, signatures and SPKI PEMs
// interoperate with an independent implementation (OpenSSL through node:crypto, used here only as the referee).
import test from 'ava';
import { createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { ed25519PublicKeyPem, ed25519RawFromPem, ed25519Signer, isValidEd25519PublicKey, randomEd25519Secret, verifyEd25519 } from '../../src/util/ed25519.ts';

const RFC8032_TEST1 = {
  secret: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
  publicKey: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
  signature: 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
};

test('the RFC 8032 test vector 1 (empty message) signs and verifies', (t) => {
  const s = ed25519Signer(Buffer.from(RFC8032_TEST1.secret, 'hex'));
  t.is(Buffer.from(s.publicKey).toString('hex'), RFC8032_TEST1.publicKey);
  const sig = s.sign(new Uint8Array(0));
  t.is(Buffer.from(sig).toString('hex'), RFC8032_TEST1.signature);
  t.true(verifyEd25519(s.publicKey, new Uint8Array(0), sig));
  t.false(verifyEd25519(s.publicKey, Buffer.from('x'), sig));
});

test('signatures and PEMs interoperate with OpenSSL both ways', (t) => {
  const s = ed25519Signer(randomEd25519Secret());
  const data = Buffer.from('heartbeat payload');
  const pem = ed25519PublicKeyPem(s.publicKey);
  const openssl = createPublicKey({ key: pem, format: 'pem' });
  t.is(openssl.asymmetricKeyType, 'ed25519');
  t.true(verify(null, data, openssl, s.sign(data)), 'OpenSSL verifies libsodium signatures against our PEM');
  const other = generateKeyPairSync('ed25519');
  const otherPem = other.publicKey.export({ format: 'pem', type: 'spki' }).toString();
  const parsed = ed25519RawFromPem(otherPem);
  if (!('raw' in parsed)) return t.fail('an OpenSSL Ed25519 PEM was refused');
  t.true(verifyEd25519(parsed.raw, data, sign(null, data, other.privateKey)));
  t.true(isValidEd25519PublicKey(parsed.raw));
});

test('PEMs of other algorithms and non-PEM text are told apart', (t) => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'pem', type: 'spki' }).toString();
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'pem', type: 'spki' }).toString();
  t.deepEqual(ed25519RawFromPem(rsa), { problem: 'algorithm' });
  t.deepEqual(ed25519RawFromPem(ec), { problem: 'algorithm' });
  t.deepEqual(ed25519RawFromPem('-----BEGIN PUBLIC KEY-----\n!!!\n-----END PUBLIC KEY-----'), { problem: 'pem' });
  t.deepEqual(ed25519RawFromPem('hello'), { problem: 'pem' });
  t.throws(() => ed25519Signer(new Uint8Array(31)));
});
