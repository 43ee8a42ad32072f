// The SEAL client for agent code and tests: an ephemeral Ed25519 key pair, attestation over HTTP or gRPC, and
// signed envelopes (docs/SEAL.md). The signed bytes are exactly the payload: the UTF-8 JSON-RPC request.
import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { OrchRuntimeClient, type InvokeToolRequest } from '../gen/orch/runtime/v1/runtime.js';
import { SEAL_PROTOCOL, type JsonRpcId, type JsonRpcResponse } from './envelope.ts';
import { ed25519PublicKeyPem, ed25519Signer, randomEd25519Secret } from '../util/ed25519.ts';

export interface SealKeyPair {
  /** 32-byte Ed25519 secret key. */
  privateKey: Uint8Array;
  /** 32-byte Ed25519 public key. */
  publicKey: Uint8Array;
}

export function generateKeyPair(): SealKeyPair {
  const privateKey = randomEd25519Secret();
  return { privateKey, publicKey: ed25519Signer(privateKey).publicKey };
}

/** The HTTP attestation form: base64 of the raw 32 bytes. */
export function publicKeyBase64(publicKey: Uint8Array): string {
  return Buffer.from(publicKey).toString('base64');
}

/** The gRPC attestation form: SPKI PEM. */
export function publicKeyPem(publicKey: Uint8Array): string {
  return ed25519PublicKeyPem(publicKey);
}

export interface BuildOptions {
  securityToken: string;
  privateKey: Uint8Array;
  id?: JsonRpcId;
  /** Envelope creation time (ms since epoch); default now. */
  now?: number;
}

/** One envelope in the gRPC form (payload bytes); `toHttpBody` gives the HTTP form. */
export interface BuiltEnvelope {
  protocol: string;
  security_token: string;
  signature: string;
  payload: Buffer;
  timestamp: string;
}

let nextId = 1;

/** The MCP JSON-RPC tools/call request bytes. */
export function toolCallPayload(toolName: string, args: Record<string, unknown>, id: JsonRpcId = nextId++): Buffer {
  return Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: toolName, arguments: args } }), 'utf8');
}

/** Signs arbitrary payload bytes into an envelope (tests use it for malformed payloads). */
export function signPayload(payload: Uint8Array, o: Omit<BuildOptions, 'id'>): BuiltEnvelope {
  return {
    protocol: SEAL_PROTOCOL,
    security_token: o.securityToken,
    signature: Buffer.from(ed25519Signer(o.privateKey).sign(payload)).toString('base64'),
    payload: Buffer.from(payload),
    timestamp: new Date(o.now ?? Date.now()).toISOString(),
  };
}

export function buildEnvelope(toolName: string, args: Record<string, unknown>, o: BuildOptions): BuiltEnvelope {
  return signPayload(toolCallPayload(toolName, args, o.id ?? nextId++), o);
}

/** The JSON body of POST /v1/seal/invoke. */
export function toHttpBody(e: BuiltEnvelope): Record<string, string> {
  return { protocol: e.protocol, security_token: e.security_token, signature: e.signature, payload: e.payload.toString('base64'), timestamp: e.timestamp };
}

export interface Attested {
  security_token: string;
  session_id?: string;
  expires_at?: string;
}

export interface AttestParams {
  agentId: string;
  executionId: string;
  containerId: string;
}

/** POST /v1/seal/attest. Throws with the server's error on a non-200. */
export async function attestHttp(baseUrl: string, keys: SealKeyPair, p: AttestParams): Promise<Attested> {
  const res = await fetch(`${baseUrl}/v1/seal/attest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ agent_id: p.agentId, execution_id: p.executionId, container_id: p.containerId, agent_public_key: publicKeyBase64(keys.publicKey) }),
  });
  const body = (await res.json()) as Attested & { error?: string };
  if (res.status !== 200) throw Object.assign(new Error(`attest ${res.status}: ${body.error ?? ''}`), { status: res.status });
  return body;
}

/** POST /v1/seal/invoke (or `path`, e.g. /v1/invoke): the HTTP status and the JSON-RPC answer. */
export async function invokeHttp(baseUrl: string, e: BuiltEnvelope, path = '/v1/seal/invoke'): Promise<{ status: number; body: JsonRpcResponse }> {
  const res = await fetch(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(toHttpBody(e)) });
  return { status: res.status, body: (await res.json()) as JsonRpcResponse };
}

/** Trailing metadata key that carries the JSON-RPC body of a failed InvokeTool. */
export const RESULT_METADATA_KEY = 'seal-result-bin';

/** gRPC SEAL calls on the runtime port (no bearer: the SEAL RPCs are exempt from grpc_auth). */
export class SealGrpcClient {
  private readonly client: OrchRuntimeClient;

  constructor(address: string) {
    this.client = new OrchRuntimeClient(address, credentials.createInsecure());
  }

  attest(keys: SealKeyPair, p: AttestParams): Promise<Attested> {
    return new Promise((resolve, reject) =>
      this.client.attestAgent(
        { agent_id: p.agentId, execution_id: p.executionId, container_id: p.containerId, public_key_pem: publicKeyPem(keys.publicKey) },
        new Metadata(),
        (err, res) => (err ? reject(err) : resolve({ security_token: res.security_token })),
      ),
    );
  }

  /** The gRPC status code (0 = OK) and the JSON-RPC answer (result_json, or the trailing metadata on failure). */
  invoke(e: BuiltEnvelope): Promise<{ code: number; body: JsonRpcResponse | undefined; details?: string }> {
    const req: InvokeToolRequest = { protocol: e.protocol, security_token: e.security_token, signature: e.signature, payload: e.payload, timestamp: e.timestamp };
    return new Promise((resolve) =>
      this.client.invokeTool(req, new Metadata(), (err: ServiceError | null, res) => {
        if (!err) return resolve({ code: 0, body: JSON.parse(res.result_json.toString('utf8')) as JsonRpcResponse });
        const raw = err.metadata?.get(RESULT_METADATA_KEY)[0];
        resolve({ code: err.code, body: raw ? (JSON.parse(Buffer.from(raw as Buffer).toString('utf8')) as JsonRpcResponse) : undefined, details: err.details });
      }),
    );
  }

  close(): void {
    this.client.close();
  }
}
