// Membership on the controller (docs/CLUSTER.md): RegisterNode, Heartbeat, DeregisterNode, drains and the
// commands that ride on heartbeat responses, and the controller-managed configuration behind SyncConfig. The
// row in cluster_nodes is the truth; the NodePeerActor of the controller that owns the row watches its heartbeat
// deadline (src/actors/node-peer/actor.ts). Any controller answers any member's calls.
//
// The common heartbeat is one UPDATE (no status change, no command waiting); anything else takes the slow path:
// a transaction that reads the row, changes it and appends its status event together.
import { createHash, randomUUID } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { EventBus } from '../bus/bus.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db, Queryable } from '../storage/db.ts';
import { appendEvent } from '../storage/event-log.ts';
import type { BusEvent } from '../bus/bus.ts';
import { nodeStream } from '../actors/node-peer/actor.ts';
import type { PeerStatus } from '../actors/node-peer/repo.ts';
import { NodePeerStatus, type HeartbeatRequest, type NodeCommand, type RegisterNodeRequest } from '../gen/orch/cluster/v1/cluster.js';
import { envelopeReplayed, type EnvelopeStamp, type NodeClaims } from './authority.ts';
import { capabilitiesOf } from './peers.ts';
import { checkManagedConfig } from './managed-config.ts';

export const MANAGED_CONFIG_ID = 'current';

export interface MembershipOptions {
  db: Db;
  bus: EventBus;
  logger: Logger;
  /** Called after a registration is written (the controller spawns the member's NodePeerActor). */
  onRegistered?: (nodeId: string) => void;
}

interface LiveRow {
  status: PeerStatus;
  session_id: string | null;
  peer_id: string | null;
  public_key: string | null;
  commands: NodeCommand[] | null;
  drain_requested_at: Date | null;
  drain_reason: string | null;
  heartbeat_stamp_ms: string | null;
  heartbeat_nonce: string | null;
}

/**
 * The commands a heartbeat answer carries: those waiting in the row (taken out of it by the same transaction), plus
 * the drain again while an operator drain stands and the member still reports ACTIVE. A command rides on one answer,
 * and an answer the worker never got (its call deadline passed first, the connection dropped) lost it; a drain is
 * also a state of the row, so it is sent until the member says it obeyed (docs/CLUSTER.md "Commands and lost answers").
 */
function withStandingDrain(row: LiveRow, reported: PeerStatus | undefined): NodeCommand[] {
  const commands = row.commands ?? [];
  if (row.drain_requested_at === null || reported !== 'ACTIVE' || commands.some((c) => c.command?.$case === 'drain')) return commands;
  const drain: NodeCommand = {
    command: { $case: 'drain', value: { reason: row.drain_reason ?? 'operator request', requested_at: new Date(row.drain_requested_at).toISOString() } },
  };
  return [...commands, drain];
}

/** Whether a heartbeat stamp is later than the member's last accepted one (ms, then nonce; as the SQL compares). */
function laterStamp(stamp: EnvelopeStamp, row: { heartbeat_stamp_ms: string | null; heartbeat_nonce: string | null }): boolean {
  if (row.heartbeat_stamp_ms === null) return true;
  const last = Number(row.heartbeat_stamp_ms);
  return stamp.sentAtMs > last || (stamp.sentAtMs === last && stamp.nonce > (row.heartbeat_nonce ?? ''));
}

function reportedStatus(s: NodePeerStatus | undefined): 'ACTIVE' | 'DRAINING' {
  return s === NodePeerStatus.DRAINING ? 'DRAINING' : 'ACTIVE';
}

export function configHash(yaml: string): string {
  return createHash('sha256').update(yaml, 'utf8').digest('hex');
}

export class Membership {
  private readonly log: Logger;
  readonly db: Db;
  private readonly batch: HeartbeatBatcher;
  constructor(private readonly o: MembershipOptions) {
    this.db = o.db;
    this.log = o.logger.child({ component: 'membership' });
    this.batch = new HeartbeatBatcher(o.db, this.log);
  }

  private async publish(events: (BusEvent | null | undefined)[]): Promise<void> {
    for (const e of events) if (e) await this.o.bus.publish(e).catch((err: unknown) => this.log.warn({ err }, 'publishing a node event failed'));
  }

  /** RegisterNode: the token's node joins (or re-joins) with its capabilities; answers the new peer id. */
  async register(claims: NodeClaims, req: RegisterNodeRequest): Promise<string> {
    if (claims.role === 'controller') throw new OrchError(Errors.FORBIDDEN, 'a controller token cannot register as a member');
    const caps = capabilitiesOf(req.capabilities);
    const grpcAddress = req.grpc_address.trim() || null;
    if (grpcAddress && !/^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/.test(grpcAddress)) throw new OrchError(Errors.BAD_REQUEST, 'grpc_address must be host:port');
    const peerId = randomUUID();
    const event = await this.o.db.tx(async (tx) => {
      const row = await this.lock(tx, claims.nodeId);
      if (row && row.status !== 'DEREGISTERED') {
        // A row no member key was ever registered for is a controller's or hybrid's own: not to be taken over.
        if (row.public_key === null) throw new OrchError(Errors.FORBIDDEN, `node id ${claims.nodeId} is in use by a node that did not join through attestation`);
        if (row.public_key !== claims.publicKey) {
          throw new OrchError(Errors.FORBIDDEN, `node ${claims.nodeId} is a member with another key`);
        }
        if (row.session_id !== null && row.session_id !== claims.sessionId) throw new OrchError(Errors.UNAUTHENTICATED, 'node token superseded; attest again');
      }
      const rejoin = row !== undefined && row.status !== 'DEREGISTERED';
      const status: PeerStatus = rejoin && row.drain_requested_at !== null ? 'DRAINING' : 'ACTIVE';
      await tx.query(
        `INSERT INTO cluster_nodes (node_id, role, status, grpc_address, tags, capabilities, registered_at, last_heartbeat_at,
           heartbeat_count, public_key, session_id, peer_id, epoch, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, now(), now(), 0, $7, $8, $9, 0, now())
         ON CONFLICT (node_id) DO UPDATE SET
           role = excluded.role, status = excluded.status, grpc_address = excluded.grpc_address, tags = excluded.tags,
           capabilities = excluded.capabilities, registered_at = now(), last_heartbeat_at = now(),
           public_key = excluded.public_key, session_id = excluded.session_id, peer_id = excluded.peer_id,
           drain_requested_at = CASE WHEN $10::BOOLEAN THEN cluster_nodes.drain_requested_at ELSE NULL END,
           drain_reason = CASE WHEN $10::BOOLEAN THEN cluster_nodes.drain_reason ELSE NULL END,
           commands = CASE WHEN $10::BOOLEAN THEN cluster_nodes.commands ELSE NULL END,
           heartbeat_stamp_ms = NULL, heartbeat_nonce = NULL, updated_at = now()`,
        [claims.nodeId, claims.role, status, grpcAddress, JSON.stringify(caps.tags), JSON.stringify(caps), claims.publicKey, claims.sessionId, peerId, rejoin],
      );
      return appendEvent(tx, nodeStream(claims.nodeId), 'registered', { node_id: claims.nodeId, role: claims.role, status, peer_id: peerId, tags: caps.tags });
    });
    await this.publish([event]);
    this.log.info({ peer: claims.nodeId, role: claims.role }, 'node registered');
    this.o.onRegistered?.(claims.nodeId);
    return peerId;
  }

  private async lock(tx: Queryable, nodeId: string): Promise<LiveRow | undefined> {
    return (
      await tx.query<LiveRow>(
        `SELECT status, session_id, peer_id, public_key, commands, drain_requested_at, drain_reason, heartbeat_stamp_ms, heartbeat_nonce
         FROM cluster_nodes WHERE node_id = $1 FOR UPDATE`,
        [nodeId],
      )
    ).rows[0];
  }

  /**
   * Heartbeat: records time and load, brings an UNHEALTHY member back, answers the commands waiting for it. `stamp` is
   * the envelope's (verified but not yet recorded): a heartbeat is written only when it is later than the member's
   * last one, which refuses replays (ClusterAuthority.verifyEnvelopeUnrecorded).
   */
  async heartbeat(claims: NodeClaims, req: HeartbeatRequest, stamp: EnvelopeStamp): Promise<NodeCommand[]> {
    if (!req.peer_id) throw new OrchError(Errors.BAD_REQUEST, 'peer_id is required (RegisterNode first)');
    const load = JSON.stringify({
      active_execution_count: req.active_execution_count,
      cpu_utilization_percent: Math.round(req.cpu_utilization_percent * 10) / 10,
      memory_utilization_percent: Math.round(req.memory_utilization_percent * 10) / 10,
      ...(req.event_loop_delay_ms !== undefined && Number.isFinite(req.event_loop_delay_ms) && req.event_loop_delay_ms >= 0
        ? { event_loop_delay_ms: Math.round(req.event_loop_delay_ms * 10) / 10 }
        : {}),
    });
    const reported = reportedStatus(req.status);
    const fast = await this.batch.record({ nodeId: claims.nodeId, sessionId: claims.sessionId, peerId: req.peer_id, load, reported, stampMs: stamp.sentAtMs, nonce: stamp.nonce });
    if (fast) {
      if (fast.event) {
        this.log.info({ peer: claims.nodeId, from: 'UNHEALTHY', to: fast.event.payload.status }, 'node status changed by heartbeat');
        await this.publish([fast.event]);
      }
      return [];
    }
    const out = await this.o.db.tx(async (tx) => {
      const row = await this.lock(tx, claims.nodeId);
      if (!row || row.status === 'DEREGISTERED' || row.peer_id === null) throw new OrchError(Errors.NOT_FOUND, `node ${claims.nodeId} is not registered; RegisterNode first`);
      if (row.session_id !== claims.sessionId) throw new OrchError(Errors.UNAUTHENTICATED, 'node token superseded; attest again');
      if (row.peer_id !== req.peer_id) throw new OrchError(Errors.FORBIDDEN, 'peer_id is not this node’s registration');
      if (!laterStamp(stamp, row)) throw envelopeReplayed();
      let status: PeerStatus = row.status;
      if (status === 'UNHEALTHY') status = row.drain_requested_at !== null || reported === 'DRAINING' ? 'DRAINING' : 'ACTIVE';
      else if (status === 'ACTIVE' && reported === 'DRAINING') status = 'DRAINING';
      // Undrained: no operator drain stands and the member says it takes work again (a heartbeat sent before the
      // undrain command reached it may have put the row back to DRAINING).
      else if (status === 'DRAINING' && row.drain_requested_at === null && reported === 'ACTIVE') status = 'ACTIVE';
      await tx.query(
        `UPDATE cluster_nodes SET last_heartbeat_at = now(), heartbeat_count = heartbeat_count + 1, load = $2, status = $3,
           commands = NULL, heartbeat_stamp_ms = $4, heartbeat_nonce = $5, updated_at = now() WHERE node_id = $1`,
        [claims.nodeId, load, status, stamp.sentAtMs, stamp.nonce],
      );
      const event =
        status !== row.status ? await appendEvent(tx, nodeStream(claims.nodeId), 'status_changed', { node_id: claims.nodeId, status, previous: row.status }) : null;
      return { commands: withStandingDrain(row, reported), event, previous: row.status, status };
    });
    if (out.event) this.log.info({ peer: claims.nodeId, from: out.previous, to: out.status }, 'node status changed by heartbeat');
    await this.publish([out.event]);
    return out.commands;
  }

  /** DeregisterNode: idempotent; the member's session ends and it is never routed to again. */
  async deregister(claims: NodeClaims, peerId: string, reason: string): Promise<void> {
    const event = await this.o.db.tx(async (tx) => {
      const res = await tx.query(
        `UPDATE cluster_nodes SET status = 'DEREGISTERED', session_id = NULL, peer_id = NULL, commands = NULL,
           drain_requested_at = NULL, drain_reason = NULL, updated_at = now()
         WHERE node_id = $1 AND session_id = $2 AND ($3 = '' OR peer_id = $3) AND status <> 'DEREGISTERED'`,
        [claims.nodeId, claims.sessionId, peerId],
      );
      if (res.rowCount === 0) return null;
      return appendEvent(tx, nodeStream(claims.nodeId), 'deregistered', { node_id: claims.nodeId, reason });
    });
    if (event) this.log.info({ peer: claims.nodeId, reason }, 'node deregistered');
    await this.publish([event]);
  }

  /** Operator drain: DRAINING now, a drain command on the member's next heartbeat response. Idempotent. */
  async drain(nodeId: string, reason = 'operator request'): Promise<{ node_id: string; status: PeerStatus; already: boolean }> {
    const out = await this.o.db.tx(async (tx) => {
      const row = await this.lock(tx, nodeId);
      if (!row || row.status === 'DEREGISTERED') throw new OrchError(Errors.NOT_FOUND, `node ${nodeId} not found`);
      if (row.drain_requested_at !== null) return { already: true, event: null };
      const requestedAt = new Date().toISOString();
      const command: NodeCommand = { command: { $case: 'drain', value: { reason, requested_at: requestedAt } } };
      await tx.query(
        `UPDATE cluster_nodes SET status = 'DRAINING', drain_requested_at = now(), drain_reason = $2,
           commands = CASE WHEN peer_id IS NULL THEN commands ELSE COALESCE(commands, '[]'::JSONB) || $3::JSONB END, updated_at = now()
         WHERE node_id = $1`,
        [nodeId, reason, JSON.stringify([command])],
      );
      const event = await appendEvent(tx, nodeStream(nodeId), 'status_changed', { node_id: nodeId, status: 'DRAINING', previous: row.status, reason });
      return { already: false, event };
    });
    await this.publish([out.event]);
    if (!out.already) this.log.info({ peer: nodeId, reason }, 'drain requested');
    return { node_id: nodeId, status: 'DRAINING', already: out.already };
  }

  /**
   * Operator undrain: ACTIVE now (an UNHEALTHY member stays UNHEALTHY, its drain forgotten), any drain command not yet
   * delivered dropped, an undrain command on the member's next heartbeat response. Idempotent: a member that is not
   * draining answers `already: true` and nothing is written.
   */
  async undrain(nodeId: string, reason = 'operator request'): Promise<{ node_id: string; status: PeerStatus; already: boolean }> {
    const out = await this.o.db.tx(async (tx) => {
      const row = await this.lock(tx, nodeId);
      if (!row || row.status === 'DEREGISTERED') throw new OrchError(Errors.NOT_FOUND, `node ${nodeId} not found`);
      if (row.drain_requested_at === null && row.status !== 'DRAINING') return { already: true, status: row.status, event: null };
      const status: PeerStatus = row.status === 'UNHEALTHY' ? 'UNHEALTHY' : 'ACTIVE';
      const undrain: NodeCommand = { command: { $case: 'undrain', value: { reason } } };
      const waiting = (row.commands ?? []).filter((c) => c.command?.$case !== 'drain');
      const commands = row.peer_id === null ? (waiting.length ? waiting : null) : [...waiting, undrain];
      await tx.query(
        `UPDATE cluster_nodes SET status = $2, drain_requested_at = NULL, drain_reason = NULL, commands = $3::JSONB, updated_at = now()
         WHERE node_id = $1`,
        [nodeId, status, commands === null ? null : JSON.stringify(commands)],
      );
      const event = status !== row.status ? await appendEvent(tx, nodeStream(nodeId), 'status_changed', { node_id: nodeId, status, previous: row.status, reason }) : null;
      return { already: false, status, event };
    });
    await this.publish([out.event]);
    if (!out.already) this.log.info({ peer: nodeId, reason }, 'undrain requested');
    return { node_id: nodeId, status: out.status, already: out.already };
  }

  /** Queues a command for a member's next heartbeat response (shutdown, sync_config …). */
  async queueCommand(nodeId: string, command: NodeCommand): Promise<void> {
    const res = await this.o.db.query(
      `UPDATE cluster_nodes SET commands = COALESCE(commands, '[]'::JSONB) || $2::JSONB, updated_at = now()
       WHERE node_id = $1 AND peer_id IS NOT NULL AND status <> 'DEREGISTERED'`,
      [nodeId, JSON.stringify([command])],
    );
    if (res.rowCount === 0) throw new OrchError(Errors.NOT_FOUND, `node ${nodeId} is not a registered member`);
  }

  /** The controller-managed sections (SyncConfig); an empty document when none were set. */
  async managedConfig(): Promise<{ config_yaml: string; config_hash: string }> {
    const row = (await this.o.db.query<{ config_yaml: string; config_hash: string }>(`SELECT config_yaml, config_hash FROM cluster_config WHERE id = $1`, [MANAGED_CONFIG_ID]))
      .rows[0];
    return row ?? { config_yaml: '', config_hash: configHash('') };
  }

  /**
   * Replaces the controller-managed sections (validated first) and queues a sync_config command for every member
   * that has not applied this hash. Answers the hash.
   */
  async setManagedConfig(yaml: string): Promise<string> {
    let doc: unknown;
    try {
      doc = yaml.trim() === '' ? {} : parseYaml(yaml);
    } catch (err) {
      throw new OrchError(Errors.VALIDATION, `managed config is not YAML: ${(err as Error).message}`);
    }
    const problem = checkManagedConfig(doc);
    if (problem) throw new OrchError(Errors.VALIDATION, problem);
    const hash = configHash(yaml);
    const command: NodeCommand = { command: { $case: 'sync_config', value: { config_hash: hash } } };
    await this.o.db.tx(async (tx) => {
      await tx.query(
        `INSERT INTO cluster_config (id, config_yaml, config_hash, updated_at) VALUES ($1, $2, $3, now())
         ON CONFLICT (id) DO UPDATE SET config_yaml = excluded.config_yaml, config_hash = excluded.config_hash, updated_at = now()`,
        [MANAGED_CONFIG_ID, yaml, hash],
      );
      await tx.query(
        `UPDATE cluster_nodes SET commands = COALESCE(commands, '[]'::JSONB) || $2::JSONB, updated_at = now()
         WHERE peer_id IS NOT NULL AND status <> 'DEREGISTERED' AND (applied_config_hash IS NULL OR applied_config_hash <> $1)`,
        [hash, JSON.stringify([command])],
      );
    });
    this.log.info({ hash }, 'managed config updated');
    return hash;
  }

  /** SyncConfig: the current managed sections; records which hash the member fetched. */
  async syncConfig(claims: NodeClaims): Promise<{ config_yaml: string; config_hash: string }> {
    const cfg = await this.managedConfig();
    await this.o.db.query(`UPDATE cluster_nodes SET applied_config_hash = $3 WHERE node_id = $1 AND session_id = $2`, [claims.nodeId, claims.sessionId, cfg.config_hash]);
    return cfg;
  }

  /** Whether the token's session is the member's current one (calls other than heartbeat check it here). */
  async requireSession(claims: NodeClaims): Promise<void> {
    if (claims.role === 'controller') return;
    const row = (await this.o.db.query<{ session_id: string | null }>(`SELECT session_id FROM cluster_nodes WHERE node_id = $1 AND status <> 'DEREGISTERED'`, [claims.nodeId])).rows[0];
    if (!row || row.session_id !== claims.sessionId) throw new OrchError(Errors.UNAUTHENTICATED, 'node session ended; attest again');
  }
}

interface PlainBeat {
  nodeId: string;
  sessionId: string;
  peerId: string;
  load: string;
  reported: 'ACTIVE' | 'DRAINING';
  stampMs: number;
  nonce: string;
}

/** A heartbeat the batch wrote; `event` when it brought the member back from UNHEALTHY. */
interface BatchedBeat {
  event: BusEvent<{ node_id: string; status: PeerStatus; previous: PeerStatus }> | null;
}

interface WrittenRow {
  node_id: string;
  session_id: string;
  peer_id: string;
  /** BIGINT: text from pg. */
  heartbeat_stamp_ms: string;
  heartbeat_nonce: string;
}

interface RecoveredRow extends WrittenRow {
  stream: string;
  seq: number;
  type: string;
  payload: { node_id: string; status: PeerStatus; previous: PeerStatus };
  recorded_at: Date;
}

function notRecorded(cause: unknown): OrchError {
  return new OrchError(Errors.UNAVAILABLE, 'heartbeat not recorded (controller database busy); the next one will be', { cause });
}

/** Identifies a heartbeat: the member's registration and its stamp (two heartbeats of a member differ in stamp). */
function beatKey(b: PlainBeat): string {
  return `${b.nodeId}\n${b.sessionId}\n${b.peerId}\n${b.stampMs}\n${b.nonce}`;
}

function writtenKey(r: WrittenRow): string {
  return `${r.node_id}\n${r.session_id}\n${r.peer_id}\n${r.heartbeat_stamp_ms}\n${r.heartbeat_nonce}`;
}

/** The statement's arrays (the same order of columns for both statements). */
function beatParams(beats: PlainBeat[]): unknown[] {
  return [
    beats.map((b) => b.nodeId),
    beats.map((b) => b.sessionId),
    beats.map((b) => b.peerId),
    beats.map((b) => b.load),
    beats.map((b) => b.reported),
    beats.map((b) => b.stampMs),
    beats.map((b) => b.nonce),
  ];
}

const BEATS = `unnest($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[], $6::BIGINT[], $7::TEXT[]) AS u(node_id, session_id, peer_id, load, reported, stamp_ms, nonce)`;
/** The replay check: the heartbeat is later than the member's last one (none yet: any). Both statements name their
 * rows by key (`c.node_id = ANY($1)`) besides joining them to the unnest, so each member row is an index lookup
 * whatever join the planner picks, never a scan of every member ever registered (issue 23). */
const LATER = `(c.heartbeat_stamp_ms IS NULL OR (c.heartbeat_stamp_ms, c.heartbeat_nonce) < (v.stamp_ms, v.nonce))`;

export const PLAIN_SQL = `UPDATE cluster_nodes c SET last_heartbeat_at = now(), heartbeat_count = c.heartbeat_count + 1, load = v.load::JSONB,
     heartbeat_stamp_ms = v.stamp_ms, heartbeat_nonce = v.nonce, updated_at = now()
   FROM (SELECT * FROM ${BEATS}) v
   WHERE c.node_id = ANY($1::TEXT[]) AND c.node_id = v.node_id AND c.session_id = v.session_id AND c.peer_id = v.peer_id AND c.commands IS NULL
     AND ((c.status = 'DRAINING' AND v.reported = 'DRAINING') OR (c.status = 'ACTIVE' AND v.reported = 'ACTIVE'))
     AND ${LATER}
   RETURNING c.node_id, c.session_id, c.peer_id, c.heartbeat_stamp_ms, c.heartbeat_nonce`;

export const RECOVER_SQL = `WITH v AS (SELECT * FROM ${BEATS}),
   upd AS (
     UPDATE cluster_nodes c SET
       status = CASE WHEN c.drain_requested_at IS NOT NULL OR v.reported = 'DRAINING' THEN 'DRAINING' ELSE 'ACTIVE' END,
       last_heartbeat_at = now(), heartbeat_count = c.heartbeat_count + 1, load = v.load::JSONB,
       heartbeat_stamp_ms = v.stamp_ms, heartbeat_nonce = v.nonce, updated_at = now()
     FROM v
     WHERE c.node_id = ANY($1::TEXT[]) AND c.node_id = v.node_id AND c.session_id = v.session_id AND c.peer_id = v.peer_id AND c.commands IS NULL
       AND c.status = 'UNHEALTHY' AND ${LATER}
     RETURNING c.node_id, c.session_id, c.peer_id, c.status, c.heartbeat_stamp_ms, c.heartbeat_nonce
   ),
   ev AS (
     INSERT INTO event_log (stream, seq, type, payload, recorded_at)
     SELECT $8::TEXT || upd.node_id,
       COALESCE((SELECT MAX(e.seq) FROM event_log e WHERE e.stream = $8::TEXT || upd.node_id), 0) + 1,
       'status_changed', jsonb_build_object('node_id', upd.node_id, 'status', upd.status, 'previous', 'UNHEALTHY'), now()
     FROM upd
     RETURNING stream, seq, type, payload, recorded_at
   )
   SELECT upd.node_id, upd.session_id, upd.peer_id, upd.heartbeat_stamp_ms, upd.heartbeat_nonce, ev.stream, ev.seq, ev.type, ev.payload, ev.recorded_at
   FROM upd JOIN ev ON ev.stream = $8::TEXT || upd.node_id`;

/**
 * One heartbeat per member for a statement (its latest), sorted by node id; the others of the batch are left out and
 * so take the slow path: an UPDATE … FROM joining a row to several heartbeats would write one of them and say nothing
 * of the others. Rows are locked in node-id order, as every other multi-row write here does, so batches never deadlock.
 */
function onePerMember(beats: PlainBeat[]): PlainBeat[] {
  const latest = new Map<string, PlainBeat>();
  for (const b of beats) {
    const seen = latest.get(b.nodeId);
    if (!seen || b.stampMs > seen.stampMs || (b.stampMs === seen.stampMs && b.nonce > seen.nonce)) latest.set(b.nodeId, b);
  }
  return [...latest.values()].sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
}

/**
 * The common heartbeat (no status change, no command waiting) of many members in one UPDATE (group commit): the first
 * heartbeat to arrive opens a gather window of GATHER_MS, and everything that arrives in it is written by one
 * statement, so a thousand members at a 1 s period cost about 1000 / GATHER_MS statements a second (each a prepared
 * UPDATE … FROM unnest) rather than one per heartbeat; a heartbeat waits at most that long for its batch, which is
 * nothing next to the period. The members of a batch that come back from UNHEALTHY (a healed partition brings hundreds
 * at once) are written by one more statement that changes their status and appends their status events together.
 * Both statements check and record the heartbeat's envelope stamp (the replay refusal). `record` answers the written
 * heartbeat, or undefined for one that takes the slow path (commands waiting, a drain reported or ended, session or peer wrong,
 * a stamp not later than the last, a concurrent status event); it rejects with UNAVAILABLE when the batch could not be
 * written (the member's next heartbeat is).
 */
class HeartbeatBatcher {
  private queue: { beat: PlainBeat; done: (written: BatchedBeat | undefined) => void; fail: (err: unknown) => void }[] = [];
  private inFlight = 0;
  private window: NodeJS.Timeout | undefined;
  private fullBatchDue = false;
  private static readonly GATHER_MS = 20;
  private static readonly MAX_IN_FLIGHT = 2;
  private static readonly MAX_BATCH = 500;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
  ) {}

  record(beat: PlainBeat): Promise<BatchedBeat | undefined> {
    return new Promise((done, fail) => {
      this.queue.push({ beat, done, fail });
      this.kick();
    });
  }

  private kick(): void {
    if (this.queue.length === 0 || this.inFlight >= HeartbeatBatcher.MAX_IN_FLIGHT) return;
    if (this.queue.length >= HeartbeatBatcher.MAX_BATCH) {
      // A full batch goes at the end of this turn, whatever window is open.
      if (this.fullBatchDue) return;
      clearTimeout(this.window);
      this.window = undefined;
      this.fullBatchDue = true;
      setImmediate(() => {
        this.fullBatchDue = false;
        this.flush();
      });
      return;
    }
    if (this.window || this.fullBatchDue) return;
    this.window = setTimeout(() => {
      this.window = undefined;
      this.flush();
    }, HeartbeatBatcher.GATHER_MS);
  }

  private flush(): void {
    const items = this.queue.splice(0, HeartbeatBatcher.MAX_BATCH);
    if (items.length === 0) return;
    this.inFlight++;
    this.write(items.map((i) => i.beat))
      .then(
        (written) => {
          // A key answers one heartbeat: a byte-identical repeat in the same batch (a replay) takes the slow path.
          const answered = new Set<string>();
          for (const i of items) {
            const key = beatKey(i.beat);
            const w = answered.has(key) ? undefined : written.get(key);
            answered.add(key);
            if (w instanceof Error) i.fail(w);
            else i.done(w);
          }
        },
        (err: unknown) => {
          // Not the slow path: a batch fails when the database is overloaded (e.g. no pooled connection in
          // time), and hundreds of single transactions would make that worse. The heartbeats are refused as
          // UNAVAILABLE; each member's next one (a period later) is written as usual.
          this.log.warn({ err, heartbeats: items.length }, 'heartbeat batch failed; heartbeats refused as unavailable');
          const refused = notRecorded(err);
          items.forEach((i) => i.fail(refused));
        },
      )
      .finally(() => {
        this.inFlight--;
        this.kick();
      });
    this.kick();
  }

  private async write(beats: PlainBeat[]): Promise<Map<string, BatchedBeat | Error>> {
    const statement = onePerMember(beats);
    const res = await this.db.query<WrittenRow>(PLAIN_SQL, beatParams(statement), { prepare: 'orch_heartbeats' });
    const written = new Map<string, BatchedBeat | Error>(res.rows.map((r) => [writtenKey(r), { event: null }]));
    const rest = statement.filter((b) => !written.has(beatKey(b)));
    if (rest.length > 0) {
      // The plain heartbeats above are committed already; a failure here concerns only these beats. A conflict (a
      // status event appended to the same stream at the same moment) sends them to the slow path, which retries;
      // anything else (an overloaded database) refuses them as UNAVAILABLE, like a failed batch.
      try {
        for (const r of await this.recover(rest)) {
          const event = { stream: r.stream, seq: r.seq, type: r.type, payload: r.payload, at: r.recorded_at.toISOString() };
          written.set(writtenKey(r), { event });
        }
      } catch (err) {
        const conflict = ['23505', '40001', '40P01'].includes(String((err as { code?: unknown }).code));
        this.log.warn({ err, heartbeats: rest.length, conflict }, 'heartbeat recovery batch failed');
        if (!conflict) for (const b of rest) written.set(beatKey(b), notRecorded(err));
      }
    }
    return written;
  }

  /**
   * UNHEALTHY members of the batch back to ACTIVE (DRAINING when a drain was asked or is reported), each with its
   * status_changed event on its node stream — in one statement, so the status and its event commit together as the
   * slow path's transaction does. Members with commands waiting are left to the slow path (it answers them).
   */
  private async recover(beats: PlainBeat[]): Promise<RecoveredRow[]> {
    const res = await this.db.query<RecoveredRow>(RECOVER_SQL, [...beatParams(beats), nodeStream('')], { prepare: 'orch_heartbeats_recovered' });
    return res.rows;
  }
}
