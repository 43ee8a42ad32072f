// The SEAL envelope (CONTRACT.md "SEAL envelope, exactly"): parsing of both wire forms, Ed25519 keys in both
// forms (PEM and base64 raw), signature verification over exactly the payload bytes, and the JSON-RPC 2.0 shapes
// of a tools/call request and its answers. Pure functions; no I/O.
import { ed25519RawFromPem, isValidEd25519PublicKey, verifyEd25519 } from '../util/ed25519.ts';

export const SEAL_PROTOCOL = 'seal/v1';
/** An envelope older than this, or this far in the future, is refused. */
export const MAX_SKEW_MS = 30_000;

/** One envelope after transport decoding: `payload` is the signed bytes. */
export interface SealEnvelope {
  protocol: string;
  security_token: string;
  /** base64 Ed25519 signature over exactly `payload`; only the canonical spelling is accepted (decodeSignature). */
  signature: string;
  payload: Uint8Array;
  /** ISO 8601 UTC. */
  timestamp: string;
}

export type JsonRpcId = string | number | null;

export interface JsonRpcError {
  jsonrpc: '2.0';
  id: JsonRpcId;
  error: { code: number; message: string; data: null };
}

export interface CallToolResult {
  content: { type: 'text'; text: string }[];
  isError: boolean;
}

export interface JsonRpcSuccess {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result: CallToolResult;
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcError;

export const RPC = {
  INVALID_REQUEST: -32600,
  INVALID_PARAMS: -32602,
  INTERNAL: -32603,
  SERVER: -32000,
} as const;

export interface ToolCallRequest {
  id: JsonRpcId;
  name: string;
  arguments: Record<string, unknown>;
}

export class EnvelopeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvelopeError';
  }
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** Strict base64 (standard or URL alphabet); throws EnvelopeError on anything else. */
export function decodeBase64(s: string, what: string): Buffer {
  const t = s.trim();
  if (!(BASE64.test(t) || BASE64URL.test(t)) || t.length === 0) throw new EnvelopeError(`${what} is not base64`);
  return Buffer.from(t, BASE64URL.test(t) && /[-_]/.test(t) ? 'base64url' : 'base64');
}

/** Ed25519 signatures are 64 bytes: canonical standard base64 of them is 86 characters and `==`. */
const SIGNATURE_B64 = /^[A-Za-z0-9+/]{85}[AQgw]==$/;

/**
 * The signature bytes of an envelope. Only the canonical text is accepted: the standard alphabet, `==` padding, and
 * the unused low bits of the last character zero — exactly what `Buffer.toString('base64')` makes of 64 bytes.
 * Every other spelling of the same bytes (no padding, the URL alphabet, flipped unused bits) is refused: the bytes
 * are the replay key, and a second spelling must never look like a new signature to anyone who keys on the text.
 */
export function decodeSignature(s: string): Buffer {
  if (!SIGNATURE_B64.test(s)) {
    throw new EnvelopeError('signature must be canonical base64 (standard alphabet, "=" padding, 88 characters) of the 64-byte Ed25519 signature');
  }
  return Buffer.from(s, 'base64');
}

function str(v: unknown, name: string): string {
  if (typeof v !== 'string' || v.length === 0) throw new EnvelopeError(`envelope field ${name} must be a non-empty string`);
  return v;
}

/** The HTTP body `{protocol, security_token, signature, payload (base64), timestamp}`. */
export function envelopeFromHttp(body: unknown): SealEnvelope {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new EnvelopeError('envelope must be a JSON object');
  const b = body as Record<string, unknown>;
  return checkEnvelope({
    protocol: str(b.protocol, 'protocol'),
    security_token: str(b.security_token, 'security_token'),
    signature: str(b.signature, 'signature'),
    payload: decodeBase64(str(b.payload, 'payload'), 'payload'),
    timestamp: str(b.timestamp, 'timestamp'),
  });
}

/** The gRPC InvokeToolRequest (payload already bytes). */
export function envelopeFromGrpc(r: { protocol?: string; security_token?: string; signature?: string; payload?: Uint8Array; timestamp?: string }): SealEnvelope {
  if (!r.payload || r.payload.length === 0) throw new EnvelopeError('envelope field payload must not be empty');
  return checkEnvelope({
    protocol: str(r.protocol, 'protocol'),
    security_token: str(r.security_token, 'security_token'),
    signature: str(r.signature, 'signature'),
    payload: r.payload,
    timestamp: str(r.timestamp, 'timestamp'),
  });
}

function checkEnvelope(e: SealEnvelope): SealEnvelope {
  if (e.protocol !== SEAL_PROTOCOL) throw new EnvelopeError(`protocol must be ${SEAL_PROTOCOL}`);
  if (e.payload.length === 0) throw new EnvelopeError('envelope field payload must not be empty');
  return e;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/** Milliseconds since the epoch of an ISO 8601 timestamp, or undefined when it is not one. */
export function parseTimestamp(ts: string): number | undefined {
  if (!ISO.test(ts)) return undefined;
  const ms = Date.parse(ts);
  return Number.isFinite(ms) ? ms : undefined;
}

/** Within ±30 s of `now`. */
export function timestampFresh(ts: string, now: number): boolean {
  const ms = parseTimestamp(ts);
  return ms !== undefined && Math.abs(now - ms) <= MAX_SKEW_MS;
}

const PEM = /-----BEGIN PUBLIC KEY-----/;

/**
 * An Ed25519 public key given as PEM (SPKI, the gRPC form) or base64 of the raw 32 bytes (the HTTP form); answers
 * the raw 32 bytes. Throws EnvelopeError for anything else, including keys of other algorithms.
 */
export function parsePublicKey(input: string): Buffer {
  const s = input.trim();
  if (PEM.test(s)) {
    const r = ed25519RawFromPem(s);
    if (!('raw' in r)) throw new EnvelopeError(r.problem === 'pem' ? 'public key PEM is not valid' : 'public key is not an Ed25519 key');
    return checkedKey(Buffer.from(r.raw));
  }
  const raw = decodeBase64(s, 'public key');
  if (raw.length !== 32) throw new EnvelopeError('public key must be 32 bytes of Ed25519 (base64) or a PEM');
  return checkedKey(raw);
}

/**
 * An encoding that is not a point on the curve, or a small-order point (the all-zero key is one: issue 14), is refused
 * at attestation rather than registered: no private key stands behind such a key.
 */
function checkedKey(raw: Buffer): Buffer {
  if (!isValidEd25519PublicKey(raw)) throw new EnvelopeError('public key is not a valid Ed25519 key (not a curve point, or of small order)');
  return raw;
}

/** Ed25519 verification of the signature bytes over exactly `payload` by the raw 32-byte key. Never throws. */
export function verifySignature(publicKey: Uint8Array, payload: Uint8Array, signature: Uint8Array): boolean {
  return verifyEd25519(publicKey, payload, signature);
}

function isId(v: unknown): v is JsonRpcId {
  return v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

/** The id of a payload for error answers, when it can be read at all. */
export function idOf(payload: Uint8Array): JsonRpcId {
  try {
    const v = JSON.parse(Buffer.from(payload).toString('utf8')) as unknown;
    if (typeof v === 'object' && v !== null && 'id' in v && isId((v as { id: unknown }).id)) return (v as { id: JsonRpcId }).id;
  } catch {
    /* no id */
  }
  return null;
}

export class ArgumentsError extends Error {}

/**
 * Parses the payload as one MCP JSON-RPC 2.0 `tools/call` request. Throws EnvelopeError (→ -32600) for a
 * malformed request or a missing tool name, ArgumentsError (→ -32602) when `arguments` is not an object.
 */
export function parseToolCall(payload: Uint8Array): ToolCallRequest {
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
  } catch {
    throw new EnvelopeError('payload is not a UTF-8 JSON-RPC request');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new EnvelopeError('payload must be one JSON-RPC request object');
  const r = v as Record<string, unknown>;
  if (r.jsonrpc !== '2.0') throw new EnvelopeError('jsonrpc must be "2.0"');
  if (!('id' in r) || !isId(r.id)) throw new EnvelopeError('id must be a string, a number or null');
  if (r.method !== 'tools/call') throw new EnvelopeError('method must be "tools/call"');
  const params = r.params;
  if (typeof params !== 'object' || params === null || Array.isArray(params)) throw new EnvelopeError('params must be an object');
  const p = params as Record<string, unknown>;
  if (typeof p.name !== 'string' || p.name.length === 0) throw new EnvelopeError('params.name (the tool name) is required');
  const args = p.arguments;
  if (args !== undefined && args !== null && (typeof args !== 'object' || Array.isArray(args))) {
    throw new ArgumentsError(`arguments of tool ${p.name} must be an object`);
  }
  return { id: r.id, name: p.name, arguments: (args ?? {}) as Record<string, unknown> };
}

export function rpcError(id: JsonRpcId, code: number, message: string): JsonRpcError {
  return { jsonrpc: '2.0', id, error: { code, message, data: null } };
}

export function rpcResult(id: JsonRpcId, value: unknown, isError: boolean): JsonRpcSuccess {
  const text = JSON.stringify(value === undefined ? null : value);
  return { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }], isError } };
}
