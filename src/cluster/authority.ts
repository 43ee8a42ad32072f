// ClusterAuthority: the controller's side of node identity (seed 000 "Node attestation sequence", "Authentication"
// of cluster RPCs; docs/CLUSTER.md). AttestNode admits only a node with a join credential (the cluster's join token in
// metadata `orch-join-token`, or a key on the allowlist; a controller with neither admits nobody), never under a
// controller's id or a live member's id held with another key, and records a single-use challenge bound to the node id
// and key the node presented; ChallengeNode checks the Ed25519 signature over the nonce (libsodium, src/util/ed25519.ts) and
// issues the node security token: an RS256 JWT (1 h) whose `cnf.jwk` is the node's Ed25519 key (RFC 7800), signed by the cluster
// key kept in `cluster_keys` and shared by every controller of the database. verifyEnvelope then checks every
// token-protected call: bearer token = envelope token, token signature and expiry, Ed25519 signature over the
// payload by the key in the token, freshness stamp, and the nonce not seen before. The private key is never
// logged; tokens are never logged either.
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import type { Metadata } from '@grpc/grpc-js';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db, Queryable } from '../storage/db.ts';
import type { SealNodeEnvelope } from '../gen/orch/cluster/v1/cluster.js';
import { bearerOf, readStamp, STAMP_MAX_SKEW_MS, type NodeCredentials } from './envelope.ts';
import { isValidEd25519PublicKey, verifyEd25519 } from '../util/ed25519.ts';
import { rawPublicKeyFromPem, type NodeKey } from './node-key.ts';

export const NODE_TOKEN_ISSUER = 'orch-cluster';
export const NODE_TOKEN_AUDIENCE = 'orch-cluster';
export const NODE_TOKEN_KEY_ID = 'node-token-v1';
/** Seed 000 "Limits": node security token lifetime. */
export const NODE_TOKEN_LIFETIME_S = 3600;
export const CHALLENGE_TTL_MS = 60_000;
export const NODE_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

export type NodeRoleName = 'controller' | 'worker' | 'hybrid';

/** What a verified token says. */
export interface NodeClaims {
  nodeId: string;
  role: NodeRoleName;
  /** The token's jti: the session cluster_nodes.session_id must name for membership calls. */
  sessionId: string;
  expiresAtMs: number;
  /** base64 of the raw Ed25519 key the token is bound to. */
  publicKey: string;
  /** The same key, raw, for verification. */
  publicKeyRaw: Buffer;
}

/** The replay record: true the first time (node, nonce) is seen by any controller. */
export interface NonceGuard {
  /** `keepMs`: how long the record must last when longer than the stamp window (a seed-form envelope's signature). */
  firstUse(nodeId: string, nonce: string, keepMs?: number): Promise<boolean>;
}

/** The replay record in the database (no Redis): one insert per envelope, rows past the window (or keep_until) pruned. */
export class DbNonceGuard implements NonceGuard {
  private inserts = 0;
  constructor(private readonly db: Db) {}

  async firstUse(nodeId: string, nonce: string, keepMs?: number): Promise<boolean> {
    if (++this.inserts % 500 === 0) {
      await this.db.query(
        `DELETE FROM cluster_seen_nonces WHERE seen_at < now() - INTERVAL '2 minutes' AND (keep_until IS NULL OR keep_until < now())`,
      );
    }
    const res =
      keepMs === undefined
        ? await this.db.query(`INSERT INTO cluster_seen_nonces (node_id, nonce) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [nodeId, nonce])
        : await this.db.query(
            `INSERT INTO cluster_seen_nonces (node_id, nonce, keep_until) VALUES ($1, $2, now() + ($3::BIGINT * INTERVAL '1 millisecond')) ON CONFLICT DO NOTHING`,
            [nodeId, nonce, Math.ceil(keepMs)],
          );
    return res.rowCount === 1;
  }
}

/** Who may join (docs/CLUSTER.md "Joining"): neither set → no remote node may join. */
export interface JoinPolicy {
  /** The cluster's join token (a secret, compared in constant time; never logged). */
  token?: string;
  /** Ed25519 public keys (base64 of the raw 32 bytes) admitted without the token. */
  allowedKeys?: readonly string[];
}

export interface ClusterAuthorityOptions {
  db: Db;
  /** Join credentials this controller accepts at AttestNode; absent or empty: remote joins are refused. */
  join?: JoinPolicy;
  /** This controller's own node id: no node may attest under it (its row may not exist yet). */
  selfId?: string;
  /** Replay record; default the database. With Redis a shared SET NX (src/seal/replay.ts) is cheaper. */
  nonces?: NonceGuard;
  tokenLifetimeSeconds?: number;
  challengeTtlMs?: number;
  logger: Logger;
}

function unauthenticated(message: string): OrchError {
  return new OrchError(Errors.UNAUTHENTICATED, message);
}

/** Equal secrets, in time that depends on neither's content nor length (SHA-256 digests are compared). */
function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}


const ROLE_OF: Record<number, NodeRoleName | undefined> = { 0: 'controller', 1: 'worker', 2: 'hybrid' };

export function roleName(role: number): NodeRoleName | undefined {
  return ROLE_OF[role];
}

export class ClusterAuthority {
  private signing?: Promise<{ privateKey: CryptoKey; publicKey: CryptoKey }>;
  private readonly verified = new Map<string, NodeClaims>();
  private readonly nonces: NonceGuard;
  private readonly lifetimeS: number;
  private readonly challengeTtlMs: number;
  private readonly log: Logger;

  constructor(private readonly o: ClusterAuthorityOptions) {
    this.nonces = o.nonces ?? new DbNonceGuard(o.db);
    this.lifetimeS = o.tokenLifetimeSeconds ?? NODE_TOKEN_LIFETIME_S;
    this.challengeTtlMs = o.challengeTtlMs ?? CHALLENGE_TTL_MS;
    this.log = o.logger.child({ component: 'cluster-authority' });
  }

  /** The token signing key: made once, kept in cluster_keys, shared by every controller of the database. */
  private keys(): Promise<{ privateKey: CryptoKey; publicKey: CryptoKey }> {
    this.signing ??= (async () => {
      const read = async () =>
        (await this.o.db.query<{ private_jwk: string; public_jwk: string }>('SELECT private_jwk, public_jwk FROM cluster_keys WHERE id = $1', [NODE_TOKEN_KEY_ID])).rows[0];
      let row = await read();
      if (!row) {
        const pair = await generateKeyPair('RS256', { extractable: true, modulusLength: 2048 });
        await this.o.db.query(
          `INSERT INTO cluster_keys (id, alg, private_jwk, public_jwk) VALUES ($1, 'RS256', $2, $3) ON CONFLICT (id) DO NOTHING`,
          [NODE_TOKEN_KEY_ID, JSON.stringify(await exportJWK(pair.privateKey)), JSON.stringify(await exportJWK(pair.publicKey))],
        );
        row = await read();
        if (!row) throw new OrchError(Errors.INTERNAL, 'cluster token key could not be stored');
        this.log.info('cluster token signing key created');
      }
      return {
        privateKey: (await importJWK(JSON.parse(row.private_jwk) as JWK, 'RS256')) as CryptoKey,
        publicKey: (await importJWK(JSON.parse(row.public_jwk) as JWK, 'RS256')) as CryptoKey,
      };
    })();
    this.signing.catch(() => (this.signing = undefined));
    return this.signing;
  }

  /**
   * AttestNode: a challenge for (node id, key, role), once the node showed a join credential (`joinToken`: the value
   * of its `orch-join-token` metadata). Order: request shape (INVALID_ARGUMENT) → credential (PERMISSION_DENIED when
   * this controller admits nobody or the key is not listed, UNAUTHENTICATED for a missing or wrong token) → the id is
   * not a controller's nor a live member's with another key (PERMISSION_DENIED).
   */
  async attest(req: { node_id: string; public_key_pem: string; role: number }, joinToken?: string): Promise<{ challenge_nonce: string; challenge_id: string }> {
    if (!NODE_ID_RE.test(req.node_id)) throw new OrchError(Errors.BAD_REQUEST, 'node_id must be 1-63 letters, digits, ".", "_" or "-"');
    const role = roleName(req.role);
    if (role !== 'worker' && role !== 'hybrid') throw new OrchError(Errors.BAD_REQUEST, 'role must be WORKER or HYBRID');
    const rawKey = rawPublicKeyFromPem(req.public_key_pem);
    if (!isValidEd25519PublicKey(rawKey)) throw new OrchError(Errors.BAD_REQUEST, 'public_key_pem is not a valid Ed25519 public key (small order or not a curve point)');
    const raw = Buffer.from(rawKey).toString('base64');
    this.admit(raw, joinToken);
    if (req.node_id === this.o.selfId) throw new OrchError(Errors.FORBIDDEN, `node id ${req.node_id} is this controller's own`);
    await this.checkPinned(this.o.db, req.node_id, raw);
    const challengeId = randomUUID();
    const nonce = randomBytes(32).toString('hex');
    await this.o.db.query(
      `INSERT INTO cluster_challenges (challenge_id, node_id, role, public_key, nonce, expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + ($6::INT * INTERVAL '1 millisecond'))`,
      [challengeId, req.node_id, role, raw, nonce, this.challengeTtlMs],
    );
    return { challenge_nonce: nonce, challenge_id: challengeId };
  }

  /** The join credential: a listed key, or the join token. Throws when neither is shown (or none is configured). */
  private admit(publicKey: string, joinToken: string | undefined): void {
    const { token, allowedKeys } = this.o.join ?? {};
    if (!token && !allowedKeys?.length) {
      throw new OrchError(
        Errors.FORBIDDEN,
        'this controller admits no remote nodes: configure spec.cluster.join_token (env:NAME) or spec.cluster.allowed_node_keys (docs/CLUSTER.md "Joining")',
      );
    }
    if (allowedKeys?.includes(publicKey)) return;
    if (!token) throw new OrchError(Errors.FORBIDDEN, 'the node key is not in spec.cluster.allowed_node_keys of this controller');
    if (joinToken === undefined || joinToken === '') throw unauthenticated('join token required: send the cluster join token in metadata orch-join-token');
    if (!sameSecret(joinToken, token)) throw unauthenticated('wrong join token');
  }

  /**
   * A node id is taken by a live member with its key, and for good by a controller: a row a controller or hybrid wrote
   * for itself (upsertSelf: no member key) is never handed to an attesting node, whatever its status. Only a
   * DEREGISTERED member's id (or an unknown one) takes a new key.
   */
  private async checkPinned(db: Queryable, nodeId: string, publicKey: string): Promise<void> {
    const row = (await db.query<{ public_key: string | null; status: string }>(`SELECT public_key, status FROM cluster_nodes WHERE node_id = $1`, [nodeId])).rows[0];
    if (!row) return;
    if (row.public_key === null) {
      throw new OrchError(Errors.FORBIDDEN, `node id ${nodeId} belongs to a controller`);
    }
    if (row.status !== 'DEREGISTERED' && row.public_key !== null && row.public_key !== publicKey) {
      throw new OrchError(Errors.FORBIDDEN, `node ${nodeId} is a member with another key; deregister it first`);
    }
  }

  /** ChallengeNode: single use, unexpired, signed by the attested key → the node security token. */
  async challenge(req: { challenge_id: string; signature: Uint8Array }): Promise<{ node_security_token: string; expires_at: string }> {
    if (!/^[0-9a-f-]{36}$/i.test(req.challenge_id)) throw unauthenticated('unknown challenge');
    // Taken before the signature is checked: a challenge gets exactly one attempt.
    const row = (
      await this.o.db.query<{ node_id: string; role: NodeRoleName; public_key: string; nonce: string; expired: boolean }>(
        `UPDATE cluster_challenges SET used_at = now() WHERE challenge_id = $1 AND used_at IS NULL
         RETURNING node_id, role, public_key, nonce, (expires_at < now()) AS expired`,
        [req.challenge_id],
      )
    ).rows[0];
    if (!row) throw unauthenticated('unknown or already used challenge');
    if (row.expired) throw unauthenticated('challenge expired');
    if (!verifyEd25519(Buffer.from(row.public_key, 'base64'), Buffer.from(row.nonce, 'utf8'), req.signature)) throw unauthenticated('challenge signature does not verify with the attested key');
    const sessionId = randomUUID();
    await this.o.db.tx(async (tx) => {
      await this.checkPinned(tx, row.node_id, row.public_key);
      // A live member's new session replaces its old one (token refresh): the old token stops working at once.
      await tx.query(`UPDATE cluster_nodes SET session_id = $2, updated_at = now() WHERE node_id = $1 AND status <> 'DEREGISTERED' AND public_key = $3`, [
        row.node_id,
        sessionId,
        row.public_key,
      ]);
    });
    const issued = await this.issue(row.node_id, row.role, row.public_key, sessionId);
    this.log.info({ peer: row.node_id, role: row.role }, 'node attested');
    return { node_security_token: issued.token, expires_at: new Date(issued.expiresAtMs).toISOString() };
  }

  /** Signs a node token (also the controller's own, for controller-to-worker calls). */
  async issue(nodeId: string, role: NodeRoleName, publicKey: string, sessionId: string = randomUUID()): Promise<{ token: string; expiresAtMs: number }> {
    const { privateKey } = await this.keys();
    const nowS = Math.floor(Date.now() / 1000);
    const exp = nowS + this.lifetimeS;
    const x = Buffer.from(publicKey, 'base64').toString('base64url');
    const token = await new SignJWT({ role, cnf: { jwk: { kty: 'OKP', crv: 'Ed25519', x } } })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: NODE_TOKEN_KEY_ID })
      .setIssuer(NODE_TOKEN_ISSUER)
      .setAudience(NODE_TOKEN_AUDIENCE)
      .setSubject(nodeId)
      .setJti(sessionId)
      .setIssuedAt(nowS)
      .setExpirationTime(exp)
      .sign(privateKey);
    return { token, expiresAtMs: exp * 1000 };
  }

  /** Credentials for this controller's own calls to workers (ForwardExecution, PushConfig). */
  async selfCredentials(nodeId: string, role: NodeRoleName, key: NodeKey): Promise<NodeCredentials & { expiresAtMs: number }> {
    const issued = await this.issue(nodeId, role, Buffer.from(key.publicKey).toString('base64'));
    return { nodeId, token: issued.token, key, expiresAtMs: issued.expiresAtMs };
  }

  /** Checks a node token: signature by the cluster key, issuer, audience, expiry, a bound Ed25519 key. */
  async verifyToken(token: string): Promise<NodeClaims> {
    const cached = this.verified.get(token);
    if (cached) {
      if (cached.expiresAtMs > Date.now()) return cached;
      this.verified.delete(token);
      throw unauthenticated('node token expired');
    }
    const { publicKey } = await this.keys();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, publicKey, { algorithms: ['RS256'], issuer: NODE_TOKEN_ISSUER, audience: NODE_TOKEN_AUDIENCE }));
    } catch (err) {
      const code = (err as { code?: string }).code;
      throw unauthenticated(code === 'ERR_JWT_EXPIRED' ? 'node token expired' : 'invalid node token');
    }
    const cnf = (payload.cnf as { jwk?: { kty?: string; crv?: string; x?: string } } | undefined)?.jwk;
    const role = payload.role;
    if (
      typeof payload.sub !== 'string' ||
      typeof payload.jti !== 'string' ||
      typeof payload.exp !== 'number' ||
      (role !== 'worker' && role !== 'hybrid' && role !== 'controller') ||
      cnf?.kty !== 'OKP' ||
      cnf.crv !== 'Ed25519' ||
      typeof cnf.x !== 'string'
    ) {
      throw unauthenticated('invalid node token');
    }
    const raw = Buffer.from(cnf.x, 'base64url');
    if (raw.length !== 32) throw unauthenticated('invalid node token');
    const claims: NodeClaims = {
      nodeId: payload.sub,
      role,
      sessionId: payload.jti,
      expiresAtMs: payload.exp * 1000,
      publicKey: raw.toString('base64'),
      publicKeyRaw: raw,
    };
    if (this.verified.size >= 20_000) {
      const now = Date.now();
      for (const [t, c] of this.verified) if (c.expiresAtMs <= now || this.verified.size >= 20_000) this.verified.delete(t);
    }
    this.verified.set(token, claims);
    return claims;
  }

  /**
   * Every token-protected RPC: the metadata token, the envelope (same token, Ed25519 signature over the payload by
   * the token's key), a fresh stamp, and a nonce never seen from this node. Answers the claims and the payload
   * (request bytes followed by the stamp; the generated decoders skip the stamp's fields). A seed-form envelope (no
   * stamp) has its signature for a nonce, recorded for the token's lifetime (verifyEnvelopeUnrecorded).
   */
  async verifyEnvelope(metadata: Metadata, envelope: SealNodeEnvelope): Promise<{ claims: NodeClaims; payload: Uint8Array }> {
    const { claims, payload, stamp } = await this.verifyEnvelopeUnrecorded(metadata, envelope);
    if (!stamp.fromSignature) await refuseSeenNonce(claims, stamp, this.nonces);
    return { claims, payload };
  }

  /**
   * verifyEnvelope without the replay record: token, signature and a fresh stamp, which is answered so that the
   * caller refuses replays itself. A seed-form envelope has no stamp to compare, so its signature is recorded here
   * (for the token's remaining lifetime) and the stamp answered is the controller's time with that nonce. Heartbeat does, in the statement that writes it: a member's heartbeat stamps must
   * increase (cluster_nodes.heartbeat_stamp_ms / heartbeat_nonce, src/cluster/membership.ts), which refuses a replayed
   * heartbeat on every controller without a round trip to the replay record per heartbeat.
   */
  async verifyEnvelopeUnrecorded(metadata: Metadata, envelope: SealNodeEnvelope): Promise<{ claims: NodeClaims; payload: Uint8Array; stamp: EnvelopeStamp }> {
    const bearer = bearerOf(metadata);
    if (!bearer) throw unauthenticated('missing node token in metadata authorization');
    // A plain comparison: both tokens come from the caller and neither is a secret the caller lacks, so its timing
    // tells nothing (the token's own signature is what is checked, by verifyToken).
    if (!envelope.node_security_token || bearer !== envelope.node_security_token) {
      throw unauthenticated('envelope token does not match the authorization metadata');
    }
    const claims = await this.verifyToken(bearer);
    const now = Date.now();
    const verified = verifySignedStamp(claims, envelope, now);
    if (verified.stamp.fromSignature) await refuseSeenNonce(claims, verified.stamp, this.nonces, claims.expiresAtMs - now + STAMP_MAX_SKEW_MS);
    return { claims, ...verified };
  }
}

/** The freshness stamp of a verified envelope. */
export interface EnvelopeStamp {
  sentAtMs: number;
  /** Hex of the 16 random bytes; for a seed-form envelope `sig:` + hex SHA-256 of the signature. */
  nonce: string;
  /** A seed-form envelope (no stamp): `sentAtMs` is the controller's receipt time, the nonce its signature's. */
  fromSignature?: true;
}

/**
 * Signature and stamp checks of an envelope whose token is already verified (no replay record). Two forms are
 * accepted (docs/CLUSTER.md "Freshness and replay"): orch's, whose payload ends with a SealNodeStamp that must be
 * within ±30 s; and the seed's, whose payload is exactly the serialized request — freshness then comes from the
 * signature used as a nonce (Ed25519 is deterministic, and libsodium accepts one encoding of each signature).
 */
export function verifySignedStamp(claims: NodeClaims, envelope: SealNodeEnvelope, now = Date.now()): { payload: Uint8Array; stamp: EnvelopeStamp } {
  // An empty payload is a seed-form envelope of an empty request (SyncConfigRequest, an unfiltered ListPeersRequest).
  const payload = envelope.payload ?? new Uint8Array();
  const signature = envelope.signature ?? new Uint8Array();
  if (!verifyEd25519(claims.publicKeyRaw, payload, signature)) {
    throw unauthenticated('envelope signature does not verify with the node key');
  }
  const stamp = readStamp(payload);
  if (!stamp) return { payload, stamp: { sentAtMs: now, nonce: `sig:${createHash('sha256').update(signature).digest('hex')}`, fromSignature: true } };
  if (Math.abs(now - stamp.sentAtMs) > STAMP_MAX_SKEW_MS) throw unauthenticated('envelope is stale');
  return { payload, stamp };
}

async function refuseSeenNonce(claims: NodeClaims, stamp: EnvelopeStamp, nonces: NonceGuard, keepMs?: number): Promise<void> {
  if (!(await nonces.firstUse(claims.nodeId, stamp.nonce, keepMs))) throw envelopeReplayed();
}

export function envelopeReplayed(): OrchError {
  return unauthenticated('envelope replayed');
}
