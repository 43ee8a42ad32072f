// Webhook signatures (seed 000): `X-Orch-Signature: sha256=<hex>` is the HMAC-SHA256 of the raw body bytes with the
// source's shared secret, taken from `ORCH_WEBHOOK_SECRET_<SOURCE>` (SOURCE upper-cased, every character outside
// A-Z 0-9 replaced by `_`). The secret is looked up by the HTTP route (the edge) and passed in; this module never
// reads the environment. Checks run in the order of seed 000's table: header absent, header malformed, secret not
// set, digest mismatch — the digest is compared in constant time.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { StimulusError } from './errors.ts';

export const SIGNATURE_HEADER = 'x-orch-signature';
const FORM = /^sha256=([0-9a-fA-F]{64})$/;

/** The environment variable holding the shared secret of `source`. */
export function webhookSecretVariable(source: string): string {
  return `ORCH_WEBHOOK_SECRET_${source.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/** `sha256=<hex>` for `body` under `secret` (what a sender puts in X-Orch-Signature). */
export function signWebhook(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** Throws the StimulusError of the first failing check; returns when the signature is right. */
export function verifyWebhookSignature(header: string | undefined, secret: string | undefined, body: Buffer): void {
  if (header === undefined || header.trim() === '') throw new StimulusError('missing_signature');
  const m = FORM.exec(header.trim());
  if (!m) throw new StimulusError('malformed_signature');
  if (secret === undefined || secret === '') throw new StimulusError('secret_not_found');
  const given = Buffer.from(m[1]!, 'hex');
  const expected = createHmac('sha256', secret).update(body).digest();
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new StimulusError('invalid_signature');
}
