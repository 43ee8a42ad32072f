// NodeClusterService handlers (seed 000 "gRPC: NodeClusterService"; docs/CLUSTER.md). On a controller:
// AttestNode and ChallengeNode (no token), and RegisterNode, Heartbeat, DeregisterNode, SyncConfig, ListPeers
// (node token in metadata + SealNodeEnvelope, checked by ClusterAuthority.verifyEnvelope before anything else).
// On a worker: PushConfig, from a controller's token. RouteExecution and ForwardExecution are added by the routing
// work to the same handler object; until then they answer UNIMPLEMENTED (cluster-server.ts).
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { Logger } from '../../logging/logger.ts';
import {
  AttestNodeRequest,
  ChallengeNodeRequest,
  DeregisterNodeRequest,
  HeartbeatRequest,
  ListPeersRequest,
  NodePeerStatus,
  PushConfigRequest,
  RegisterNodeRequest,
  type AttestNodeResponse,
  type ChallengeNodeResponse,
  type DeregisterNodeResponse,
  type HeartbeatResponse,
  type ListPeersResponse,
  type NodeClusterServiceServer,
  type PushConfigResponse,
  type RegisterNodeResponse,
  type SealNodeEnvelope,
  type SyncConfigResponse,
} from '../../gen/orch/cluster/v1/cluster.js';
import type { ClusterAuthority, NodeClaims } from '../authority.ts';
import { joinTokenOf } from '../envelope.ts';
import type { Membership } from '../membership.ts';
import { listPeers, peerStatusFromProto, toNodePeer } from '../peers.ts';

type Decoder<T> = { decode(input: Uint8Array): T };

function decode<T>(d: Decoder<T>, payload: Uint8Array, what: string): T {
  try {
    return d.decode(payload);
  } catch {
    throw new OrchError(Errors.BAD_REQUEST, `envelope payload is not a ${what}`);
  }
}

/** A unary handler from an async function; the guard (cluster-server.ts) turns a throw into a gRPC status. */
function unary<Req, Res>(fn: (call: ServerUnaryCall<Req, Res>) => Promise<Res>) {
  return async (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): Promise<void> => {
    callback(null, await fn(call));
  };
}

export interface ControllerHandlerDeps {
  authority: ClusterAuthority;
  membership: Membership;
  logger: Logger;
}

export function clusterHandlers(d: ControllerHandlerDeps): Partial<NodeClusterServiceServer> {
  const { authority, membership } = d;
  /** Token + envelope; membership calls also need the token's session to be the member's current one. */
  const open = async <T>(call: ServerUnaryCall<SealNodeEnvelope, unknown>, decoder: Decoder<T>, what: string): Promise<{ claims: NodeClaims; req: T }> => {
    const { claims, payload } = await authority.verifyEnvelope(call.metadata, call.request);
    return { claims, req: decode(decoder, payload, what) };
  };
  return {
    attestNode: unary<AttestNodeRequest, AttestNodeResponse>((call) => authority.attest(call.request, joinTokenOf(call.metadata))),
    challengeNode: unary<ChallengeNodeRequest, ChallengeNodeResponse>((call) => authority.challenge(call.request)),
    registerNode: unary<SealNodeEnvelope, RegisterNodeResponse>(async (call) => {
      const { claims, req } = await open(call, RegisterNodeRequest, 'RegisterNodeRequest');
      return { peer_id: await membership.register(claims, req) };
    }),
    heartbeat: unary<SealNodeEnvelope, HeartbeatResponse>(async (call) => {
      // The replay refusal of a heartbeat is its stamp, checked by the statement that writes it (membership.ts).
      const { claims, payload, stamp } = await authority.verifyEnvelopeUnrecorded(call.metadata, call.request);
      return { commands: await membership.heartbeat(claims, decode(HeartbeatRequest, payload, 'HeartbeatRequest'), stamp) };
    }),
    deregisterNode: unary<SealNodeEnvelope, DeregisterNodeResponse>(async (call) => {
      const { claims, req } = await open(call, DeregisterNodeRequest, 'DeregisterNodeRequest');
      await membership.deregister(claims, req.peer_id, req.reason || 'unspecified');
      return {};
    }),
    syncConfig: unary<SealNodeEnvelope, SyncConfigResponse>(async (call) => {
      const { claims } = await authority.verifyEnvelope(call.metadata, call.request);
      await membership.requireSession(claims);
      return membership.syncConfig(claims);
    }),
    listPeers: unary<SealNodeEnvelope, ListPeersResponse>(async (call) => {
      const { claims, req } = await open(call, ListPeersRequest, 'ListPeersRequest');
      await membership.requireSession(claims);
      const status = req.filter_status === undefined ? undefined : peerStatusFromProto(req.filter_status);
      if (req.filter_status !== undefined && !(req.filter_status in NodePeerStatus)) throw new OrchError(Errors.BAD_REQUEST, 'unknown filter_status');
      const peers = await listPeers(membership.db, status ? { status } : {});
      return { peers: peers.map(toNodePeer) };
    }),
  };
}

export interface WorkerHandlerDeps {
  /** Verifies the controller's token and envelope (the worker shares the database and so the cluster key). */
  authority: ClusterAuthority;
  /** Checks and applies managed sections; answers a rejection reason or undefined when applied. */
  applyConfig: (yaml: string, hash: string) => Promise<string | undefined>;
  logger: Logger;
}

/** A worker's NodeClusterService: PushConfig from a controller (ForwardExecution is the routing work's). */
export function workerClusterHandlers(d: WorkerHandlerDeps): Partial<NodeClusterServiceServer> {
  return {
    pushConfig: unary<SealNodeEnvelope, PushConfigResponse>(async (call) => {
      const { claims, payload } = await d.authority.verifyEnvelope(call.metadata, call.request);
      if (claims.role === 'worker') throw new OrchError(Errors.FORBIDDEN, 'only a controller may push configuration');
      const req = decode(PushConfigRequest, payload, 'PushConfigRequest');
      const reason = await d.applyConfig(req.config_yaml, req.config_hash);
      d.logger.info({ from: claims.nodeId, accepted: reason === undefined, reason }, 'PushConfig');
      return reason === undefined ? { accepted: true } : { accepted: false, rejection_reason: reason };
    }),
  };
}
