// SealService: attestation of agent containers and verification + routing of their signed tool calls (seed 000
// "SEAL", seed 001 "Errors", CONTRACT.md "SEAL envelope, exactly"). Transports (HTTP seal-routes, gRPC
// seal-handlers) only decode the envelope and send the answer; every decision is made here.
//
// Invoke order: envelope shape, canonical base64 signature (400) → security token (401) → session (401 expired) → Ed25519 signature over the
// payload bytes (401) → timestamp ±30 s (401) → execution still running (403) and signature not seen before
// (401), in one statement → JSON-RPC request (400 / 422) → ToolCatalog.call: arguments (422), policy (403),
// handler (200, isError for a tool-level failure). Anything unexpected is 500/-32603; nothing throws out.
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { AgentManifest } from '../agents/manifest/types.ts';
import { getExecution, isTerminal } from '../agents/execution/repo.ts';
import { prepareVolumes, WORKSPACE } from '../agents/execution/sandbox.ts';
import { toolMountsOf } from '../agents/execution/volumes.ts';
import type { VolumeService } from '../volumes/service.ts';
import { isUuid } from '../agents/execution/service.ts';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import type { Principal } from '../auth/principal.ts';
import type { SecurityContext, ToolCallContext, ToolCatalog, VolumeMount } from '../tools/types.ts';
import { manifestContext, type ContextResolver } from './context.ts';
import type { SandboxCommands } from './sandbox-commands.ts';
import type { ReplayGuard } from './replay.ts';
import { ExecutionLiveness } from './liveness.ts';
import type { EventBus } from '../bus/bus.ts';
import {
  ArgumentsError,
  decodeSignature,
  EnvelopeError,
  MAX_SKEW_MS,
  idOf,
  parsePublicKey,
  parseToolCall,
  rpcError,
  rpcResult,
  RPC,
  timestampFresh,
  verifySignature,
  type JsonRpcId,
  type JsonRpcResponse,
  type SealEnvelope,
} from './envelope.ts';

export const TOKEN_ISSUER = 'orch-seal';
export const TOKEN_AUDIENCE = 'orch-seal';
const KEY_ID = 'seal-token-v1';
/** Token lifetime when the manifest names no resources.timeout. */
const DEFAULT_LIFETIME_S = 3600;

/** Tool-level errors that are policy decisions: 403 / -32000 / PERMISSION_DENIED. */
export const POLICY_ERRORS: ReadonlySet<string> = new Set([
  'ToolNotAllowed',
  'ToolNotFound',
  'PathOutsideBoundary',
  'DomainNotAllowed',
  'CommandNotAllowed',
  'SubcommandNotAllowed',
  'PERMISSION_DENIED',
  'PermissionDenied',
]);

export interface AttestRequest {
  agent_id: string;
  execution_id: string;
  container_id: string;
  /** PEM (gRPC `public_key_pem`) or base64 of the raw 32 bytes (HTTP `agent_public_key`); both accepted. */
  public_key: string;
}

export interface AttestResult {
  security_token: string;
  session_id: string;
  expires_at: string;
}

export interface InvokeResult {
  httpStatus: 200 | 400 | 401 | 403 | 422 | 500;
  grpcStatus: GrpcStatus;
  body: JsonRpcResponse;
}

export interface SealDeps {
  db: Db;
  dataDir: string;
  /** The tool catalog; a getter so a node can wire it after the service exists. */
  catalog: ToolCatalog | (() => ToolCatalog | undefined);
  /** Manifest → SecurityContext (src/tools/policy.ts contextFromManifest); default: manifestContext. */
  contextFor?: ContextResolver;
  logger: Logger;
  /** Clock, for tests. */
  now?: () => number;
  /** This node's id (named in cmd.run's error when the execution runs elsewhere). */
  nodeId?: string;
  /** Live sandboxes of this node's executions: cmd.run runs in the caller's (src/seal/sandbox-commands.ts). */
  sandboxCommands?: SandboxCommands;
  /** The shared replay record in Redis (src/seal/replay.ts). With `bus` too, an invoke makes no database round
   * trip: liveness comes from the bus (src/seal/liveness.ts). Without them: one SQL statement per invoke. */
  replay?: ReplayGuard;
  bus?: EventBus;
  /** Liveness safety-net re-read interval (default 1 s). */
  livenessRevalidateMs?: number;
  /** The node's volumes: an execution's spec.volumes are served to fs.* through them (src/agents/execution/volumes.ts). */
  volumes?: VolumeService;
}

interface TokenClaims {
  session_id: string;
  execution_id: string;
  agent_id: string;
  tenant_id: string;
  security_context: string;
  expMs: number;
}

interface Session {
  sessionId: string;
  executionId: string;
  agentId: string;
  tenantId: string;
  /** The agent's raw Ed25519 public key. */
  key: Buffer;
  context: SecurityContext;
  expiresMs: number;
  manifest: AgentManifest;
  mounts: VolumeMount[];
  principal: Principal;
}

interface SessionRow {
  session_id: string;
  execution_id: string;
  agent_id: string;
  tenant_id: string;
  public_key: string;
  security_context: SecurityContext | string;
  expires_at: Date | string;
  status: string;
}

const CACHE_MAX = 10_000;

function answer(httpStatus: InvokeResult['httpStatus'], body: JsonRpcResponse): InvokeResult {
  const grpcStatus =
    httpStatus === 200
      ? GrpcStatus.OK
      : httpStatus === 401
        ? GrpcStatus.UNAUTHENTICATED
        : httpStatus === 403
          ? GrpcStatus.PERMISSION_DENIED
          : httpStatus === 500
            ? GrpcStatus.INTERNAL
            : GrpcStatus.INVALID_ARGUMENT;
  return { httpStatus, grpcStatus, body };
}

const fail = (httpStatus: InvokeResult['httpStatus'], id: JsonRpcId, code: number, message: string): InvokeResult =>
  answer(httpStatus, rpcError(id, code, message));

/**
 * Whether `given` proves the caller runs in the execution's sandbox. With an attestation secret recorded (process
 * isolation) it must be `<container_id>:<secret>` whose secret hashes to the record (compared in constant time); a
 * `process-` id without a record proves nothing (it is `process-<execution_id>`). Otherwise (docker) the engine's
 * container id itself.
 */
function containerProofHolds(row: { container_id: string | null; attestation_secret_sha256?: string | null }, given: string): boolean {
  const id = row.container_id;
  if (!id) return false;
  const recorded = row.attestation_secret_sha256;
  if (recorded) {
    if (!given.startsWith(`${id}:`)) return false;
    const digest = createHash('sha256').update(given.slice(id.length + 1), 'utf8').digest();
    const expected = Buffer.from(recorded, 'hex');
    return expected.length === digest.length && timingSafeEqual(digest, expected);
  }
  if (id.startsWith('process-')) return false;
  return given === id;
}

export class SealService {
  private signingKey?: Promise<{ privateKey: CryptoKey; publicKey: CryptoKey }>;
  private readonly tokens = new Map<string, TokenClaims>();
  private readonly sessions = new Map<string, Session>();
  private readonly now: () => number;
  private readonly contextFor: ContextResolver;
  private readonly log: Logger;
  private readonly liveness: ExecutionLiveness | undefined;

  constructor(private readonly deps: SealDeps) {
    this.now = deps.now ?? Date.now;
    this.contextFor = deps.contextFor ?? manifestContext;
    this.log = deps.logger.child({ component: 'seal' });
    if (deps.replay && deps.bus) {
      this.liveness = new ExecutionLiveness({
        db: deps.db,
        bus: deps.bus,
        logger: this.log,
        now: this.now,
        ...(deps.livenessRevalidateMs !== undefined ? { revalidateMs: deps.livenessRevalidateMs } : {}),
      });
    }
  }

  /** Where replay records go: 'redis' (shared, no database round trip) or 'database'. */
  get replayStore(): 'redis' | 'database' {
    return this.liveness ? 'redis' : 'database';
  }

  private catalog(): ToolCatalog | undefined {
    return typeof this.deps.catalog === 'function' ? this.deps.catalog() : this.deps.catalog;
  }

  /** The token signing key: made once, kept in seal_keys, shared by every node of the database. */
  private keys(): Promise<{ privateKey: CryptoKey; publicKey: CryptoKey }> {
    this.signingKey ??= (async () => {
      const read = async () =>
        (await this.deps.db.query<{ private_jwk: string; public_jwk: string }>('SELECT private_jwk, public_jwk FROM seal_keys WHERE id = $1', [KEY_ID])).rows[0];
      let row = await read();
      if (!row) {
        const pair = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
        await this.deps.db.query(
          `INSERT INTO seal_keys (id, alg, private_jwk, public_jwk) VALUES ($1, 'EdDSA', $2, $3) ON CONFLICT (id) DO NOTHING`,
          [KEY_ID, JSON.stringify(await exportJWK(pair.privateKey)), JSON.stringify(await exportJWK(pair.publicKey))],
        );
        row = await read();
        if (!row) throw new OrchError(Errors.INTERNAL, 'SEAL signing key could not be stored');
      }
      return {
        privateKey: (await importJWK(JSON.parse(row.private_jwk) as JWK, 'EdDSA')) as CryptoKey,
        publicKey: (await importJWK(JSON.parse(row.public_jwk) as JWK, 'EdDSA')) as CryptoKey,
      };
    })();
    this.signingKey.catch(() => (this.signingKey = undefined));
    return this.signingKey;
  }

  /** AttestAgent: proves the container runs the execution and registers its key. Throws OrchError. */
  async attest(req: AttestRequest): Promise<AttestResult> {
    const r = req as Partial<Record<keyof AttestRequest, unknown>>;
    if (typeof r.agent_id !== 'string' || !isUuid(r.agent_id)) throw new OrchError(Errors.BAD_REQUEST, 'agent_id must be a UUID');
    if (typeof r.execution_id !== 'string' || !isUuid(r.execution_id)) throw new OrchError(Errors.BAD_REQUEST, 'execution_id must be a UUID');
    if (typeof r.container_id !== 'string' || r.container_id.length === 0) throw new OrchError(Errors.BAD_REQUEST, 'container_id is required');
    if (typeof r.public_key !== 'string' || r.public_key.length === 0) throw new OrchError(Errors.BAD_REQUEST, 'the agent public key is required');
    let raw: Buffer;
    try {
      raw = parsePublicKey(r.public_key);
    } catch (err) {
      throw new OrchError(Errors.BAD_REQUEST, (err as Error).message);
    }
    const row = await getExecution(this.deps.db, r.execution_id);
    // One answer for every mismatch, so that attestation tells a guesser nothing about other executions.
    const refuse = (why: string) => new OrchError(Errors.FORBIDDEN, `attestation refused: ${why}`);
    if (!row || row.agent_id !== r.agent_id) throw refuse('no such execution for this agent');
    if (isTerminal(row.status)) throw refuse(`execution is ${row.status}`);
    if (!containerProofHolds(row, r.container_id)) throw refuse('container_id does not belong to the execution');
    const context = this.contextFor(row.manifest);
    const lifetime = row.manifest.spec.security?.resources?.timeout;
    const seconds = typeof lifetime === 'number' && lifetime > 0 ? lifetime : DEFAULT_LIFETIME_S;
    const now = this.now();
    const expiresMs = now + seconds * 1000;
    const sessionId = randomUUID();
    await this.deps.db.query(
      `INSERT INTO seal_sessions (session_id, execution_id, agent_id, tenant_id, public_key, security_context, expires_at, status)
       VALUES ($1, $2, $3, $4, $5, $6::JSONB, $7, 'active')`,
      [sessionId, row.id, row.agent_id, row.tenant_id, raw.toString('base64'), JSON.stringify(context), new Date(expiresMs).toISOString()],
    );
    const { privateKey } = await this.keys();
    const token = await new SignJWT({
      execution_id: row.id,
      session_id: sessionId,
      tenant_id: row.tenant_id,
      security_context: context.name,
    })
      .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT', kid: KEY_ID })
      .setIssuer(TOKEN_ISSUER)
      .setAudience(TOKEN_AUDIENCE)
      .setSubject(row.agent_id)
      .setJti(sessionId)
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(Math.floor(expiresMs / 1000))
      .sign(privateKey);
    this.log.info({ execution: row.id, agent: row.agent_id, session: sessionId, context: context.name }, 'agent attested');
    return { security_token: token, session_id: sessionId, expires_at: new Date(expiresMs).toISOString() };
  }

  /** The claims of a token this service signed, or undefined (bad signature, expired, wrong audience). */
  private async claims(token: string): Promise<TokenClaims | undefined> {
    const cached = this.tokens.get(token);
    if (cached) return cached.expMs > this.now() ? cached : undefined;
    const { publicKey } = await this.keys();
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, publicKey, {
        issuer: TOKEN_ISSUER,
        audience: TOKEN_AUDIENCE,
        algorithms: ['EdDSA'],
        currentDate: new Date(this.now()),
      }));
    } catch {
      return undefined;
    }
    const { session_id, execution_id, sub, tenant_id, security_context, exp } = payload;
    if (typeof session_id !== 'string' || typeof execution_id !== 'string' || typeof sub !== 'string' || typeof tenant_id !== 'string' || typeof exp !== 'number') {
      return undefined;
    }
    const c: TokenClaims = { session_id, execution_id, agent_id: sub, tenant_id, security_context: String(security_context), expMs: exp * 1000 };
    if (this.tokens.size >= CACHE_MAX) this.tokens.clear();
    this.tokens.set(token, c);
    return c;
  }

  private async session(c: TokenClaims): Promise<Session | undefined> {
    const cached = this.sessions.get(c.session_id);
    if (cached) return cached;
    const row = (await this.deps.db.query<SessionRow>('SELECT * FROM seal_sessions WHERE session_id = $1', [c.session_id])).rows[0];
    if (!row || row.execution_id !== c.execution_id || row.agent_id !== c.agent_id) return undefined;
    const exec = await getExecution(this.deps.db, row.execution_id);
    if (!exec) return undefined;
    const context = typeof row.security_context === 'string' ? (JSON.parse(row.security_context) as SecurityContext) : row.security_context;
    // With the node's volumes, spec.volumes are the execution's volumes of the VolumeService (as in its loop).
    const mounts = this.deps.volumes
      ? await toolMountsOf(this.deps.volumes, this.deps.dataDir, { id: exec.id, tenantId: exec.tenant_id, manifest: exec.manifest })
      : await prepareVolumes(this.deps.dataDir, exec.id, exec.manifest);
    const s: Session = {
      sessionId: row.session_id,
      executionId: row.execution_id,
      agentId: row.agent_id,
      tenantId: row.tenant_id,
      key: Buffer.from(row.public_key, 'base64'),
      context,
      expiresMs: new Date(row.expires_at).getTime(),
      manifest: exec.manifest,
      mounts,
      principal: {
        subject: `agent:${row.agent_id}`,
        username: `agent:${exec.agent_name}`,
        roles: [],
        tenantId: row.tenant_id,
        homeTenantId: row.tenant_id,
        isServiceAccount: false,
        delegated: false,
      },
    };
    if (row.status !== 'active') return undefined;
    if (this.sessions.size >= CACHE_MAX) this.sessions.clear();
    this.sessions.set(s.sessionId, s);
    return s;
  }

  /** InvokeTool: never throws; every outcome is a JSON-RPC answer with its HTTP and gRPC status. */
  async invoke(envelope: SealEnvelope | EnvelopeError): Promise<InvokeResult> {
    try {
      return await this.invokeUnsafe(envelope);
    } catch (err) {
      this.log.error({ err }, 'SEAL invoke failed');
      return fail(500, envelope instanceof EnvelopeError ? null : idOf(envelope.payload), RPC.INTERNAL, 'internal error');
    }
  }

  private async invokeUnsafe(envelope: SealEnvelope | EnvelopeError): Promise<InvokeResult> {
    if (envelope instanceof EnvelopeError) return fail(400, null, RPC.INVALID_REQUEST, envelope.message);
    const id = idOf(envelope.payload);
    let signature: Buffer;
    try {
      signature = decodeSignature(envelope.signature);
    } catch (err) {
      return fail(400, id, RPC.INVALID_REQUEST, (err as Error).message);
    }
    const claims = await this.claims(envelope.security_token);
    if (!claims) return fail(401, id, RPC.SERVER, 'invalid or expired security token');
    const s = await this.session(claims);
    if (!s) return fail(401, id, RPC.SERVER, 'unknown SEAL session');
    const now = this.now();
    if (s.expiresMs <= now) return fail(401, id, RPC.SERVER, 'SEAL session expired');
    if (!verifySignature(s.key, envelope.payload, signature)) return fail(401, id, RPC.SERVER, 'invalid envelope signature');
    if (!timestampFresh(envelope.timestamp, now)) return fail(401, id, RPC.SERVER, 'envelope timestamp outside the 30 s window');

    // The replay key is the signature's bytes (through their one canonical spelling, so rows written before this
    // rule still match). libsodium refuses the other encodings of a valid signature (S ≥ L), so one signed payload
    // has one key. The timestamp is not signed: the record must live as long as the session, not the 30 s window.
    const hash = createHash('sha256').update(signature.toString('base64')).digest('hex');
    if (this.liveness && this.deps.replay) {
      // Redis path: liveness from the bus (403 once the execution ended), then SET NX (401 for a replay).
      if (!(await this.liveness.isLive(s.executionId, s.sessionId))) {
        this.sessions.delete(s.sessionId);
        return fail(403, id, RPC.SERVER, 'inactive SEAL session: the execution has ended');
      }
      if (!(await this.deps.replay.firstUse(s.sessionId, hash, s.expiresMs - now + MAX_SKEW_MS))) return fail(401, id, RPC.SERVER, 'envelope signature already used in this session (replay)');
      return this.route(s, envelope, id);
    }
    // Database path: the replay record is written only while the execution runs and the session is active, in one
    // statement. When it writes nothing, a second read tells an ended execution (403) from a replay (401).
    const ins = await this.deps.db.query(
      // keep_until: the session's expiry (+ a minute of skew); past it the token is refused first (src/seal/prune.ts).
      `INSERT INTO seal_seen_signatures (session_id, signature_hash, keep_until)
       SELECT $1, $2, ss.expires_at + INTERVAL '1 minute' FROM seal_sessions ss
       WHERE ss.session_id = $1 AND ss.status = 'active'
         AND EXISTS (SELECT 1 FROM executions WHERE id = $3 AND status IN ('pending', 'running'))
       ON CONFLICT (session_id, signature_hash) DO NOTHING`,
      [s.sessionId, hash, s.executionId],
    );
    if (ins.rowCount === 0) {
      const st = (
        await this.deps.db.query<{ exec_status: string | null; session_status: string | null }>(
          `SELECT (SELECT status FROM executions WHERE id = $2) AS exec_status, (SELECT status FROM seal_sessions WHERE session_id = $1) AS session_status`,
          [s.sessionId, s.executionId],
        )
      ).rows[0];
      if (!st || st.exec_status === null || isTerminal(st.exec_status) || st.session_status !== 'active') {
        this.sessions.delete(s.sessionId);
        return fail(403, id, RPC.SERVER, `inactive SEAL session: execution is ${st?.exec_status ?? 'gone'}`);
      }
      return fail(401, id, RPC.SERVER, 'envelope signature already used in this session (replay)');
    }
    return this.route(s, envelope, id);
  }

  /** JSON-RPC request → catalog call → answer (after every envelope check passed). */
  private async route(s: Session, envelope: SealEnvelope, id: JsonRpcId): Promise<InvokeResult> {
    let call;
    try {
      call = parseToolCall(envelope.payload);
    } catch (err) {
      if (err instanceof ArgumentsError) return fail(422, id, RPC.INVALID_PARAMS, err.message);
      return fail(400, id, RPC.INVALID_REQUEST, (err as Error).message);
    }
    const catalog = this.catalog();
    if (!catalog) return fail(500, call.id, RPC.INTERNAL, 'internal error: no tool catalog on this node');
    const ctx: ToolCallContext = {
      origin: 'seal',
      principal: s.principal,
      tenantId: s.tenantId,
      context: s.context,
      executionId: s.executionId,
      agentId: s.agentId,
      manifest: s.manifest,
      mounts: s.mounts,
      workdir: WORKSPACE,
    };
    // cmd.run runs in the caller's own sandbox, registered by its ExecutionLoop on this node.
    const runner = this.deps.sandboxCommands?.get(s.executionId);
    if (runner) ctx.runCommand = (req) => runner(req);
    else if (call.name === 'cmd.run') ctx.noSandbox = await this.noSandbox(s.executionId);
    const outcome = await catalog.call(ctx, call.name, call.arguments);
    if (outcome.ok) return answer(200, rpcResult(call.id, outcome.result, false));
    const e = outcome.error;
    if (e.error === 'InvalidArguments') return fail(422, call.id, RPC.INVALID_PARAMS, e.message);
    if (POLICY_ERRORS.has(e.error)) return fail(403, call.id, RPC.SERVER, `${e.error}: ${e.message}`);
    return answer(200, rpcResult(call.id, e, true));
  }

  /** cmd.run's error when this node holds no live sandbox of the execution. */
  private async noSandbox(executionId: string): Promise<{ error: string; message: string }> {
    const row = await getExecution(this.deps.db, executionId);
    const owner = row?.owner_node;
    if (owner && this.deps.nodeId && owner !== this.deps.nodeId) {
      return {
        error: 'SandboxOnOtherNode',
        message: `execution ${executionId} runs on node ${owner}; cmd.run over SEAL reaches only sandboxes of the node it is sent to (${this.deps.nodeId}) — send it to ${owner} (cluster forwarding is not built yet)`,
      };
    }
    return { error: 'NoSandbox', message: `execution ${executionId} has no live sandbox on this node (not started yet, restarting, or ended)` };
  }

  /** Closes the liveness subscriptions (the replay guard belongs to whoever opened it). */
  async close(): Promise<void> {
    await this.liveness?.close();
  }

  /** Forgets cached sessions (tests; an execution ending is also seen on the next invoke without this). */
  clearCaches(): void {
    this.tokens.clear();
    this.sessions.clear();
  }
}
