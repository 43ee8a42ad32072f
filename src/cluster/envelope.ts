// SealNodeEnvelope on the wire (CONTRACT.md "Cluster wire format", docs/CLUSTER.md "Freshness and replay"): the
// payload is the serialized request followed by a SealNodeStamp (sent_at, 16-byte nonce), the signature is Ed25519
// over exactly those bytes by the node key, and the token rides both in the envelope and in metadata
// `authorization: Bearer <token>`. Pure functions; no I/O.
import { randomBytes } from 'node:crypto';
import { Metadata } from '@grpc/grpc-js';
import { SealNodeStamp, type SealNodeEnvelope } from '../gen/orch/cluster/v1/cluster.js';
import type { NodeKey } from './node-key.ts';

/** A stamp older than this, or this far in the future, is refused; the replay record outlives it. */
export const STAMP_MAX_SKEW_MS = 30_000;

/** What a node needs to make token-protected calls: its token and its key. */
export interface NodeCredentials {
  nodeId: string;
  token: string;
  key: NodeKey;
}

/** Seals request bytes: appends a fresh stamp, signs the whole payload. */
export function sealPayload(request: Uint8Array, creds: { token: string; key: NodeKey }, now = Date.now()): SealNodeEnvelope {
  const stamp = SealNodeStamp.encode({ orch_sent_at: new Date(now).toISOString(), orch_nonce: randomBytes(16) }).finish();
  const payload = Buffer.concat([request, stamp]);
  return { node_security_token: creds.token, signature: Buffer.from(creds.key.sign(payload)), payload };
}

/** The stamp of a payload, or undefined when it has none (or it does not parse). */
export function readStamp(payload: Uint8Array): { sentAtMs: number; nonce: string } | undefined {
  let stamp: SealNodeStamp;
  try {
    stamp = SealNodeStamp.decode(payload);
  } catch {
    return undefined;
  }
  const ms = Date.parse(stamp.orch_sent_at);
  if (!stamp.orch_sent_at || !Number.isFinite(ms) || stamp.orch_nonce.length < 16) return undefined;
  return { sentAtMs: ms, nonce: Buffer.from(stamp.orch_nonce).toString('hex') };
}

/** Metadata key of the cluster join token on AttestNode (docs/CLUSTER.md "Joining"). */
export const JOIN_TOKEN_METADATA = 'orch-join-token';

/** AttestNode metadata: the join token when the node has one. */
export function joinMetadata(joinToken: string | undefined): Metadata {
  const md = new Metadata();
  if (joinToken) md.set(JOIN_TOKEN_METADATA, joinToken);
  return md;
}

/** The join token of AttestNode metadata, or undefined. */
export function joinTokenOf(md: Metadata): string | undefined {
  const v = md.get(JOIN_TOKEN_METADATA)[0];
  return typeof v === 'string' ? v : undefined;
}

export function authMetadata(token: string): Metadata {
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  return md;
}

/** The bearer token of call metadata, or undefined. */
export function bearerOf(md: Metadata): string | undefined {
  const v = md.get('authorization')[0];
  if (typeof v !== 'string') return undefined;
  const m = /^Bearer\s+(\S+)$/i.exec(v.trim());
  return m?.[1];
}
