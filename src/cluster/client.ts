// A NodeClusterService client that seals every token-protected call (docs/CLUSTER.md): the request is encoded,
// stamped and signed by the node key, and the token rides in metadata and envelope. Used by the worker's
// membership loop, by controllers calling workers (PushConfig; ForwardExecution in the routing work), by tests and
// by the heartbeat benchmark.
import { credentials, Metadata, type CallOptions, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import {
  DeregisterNodeRequest,
  HeartbeatRequest,
  ListPeersRequest,
  NodeClusterServiceClient,
  PushConfigRequest,
  RegisterNodeRequest,
  SyncConfigRequest,
  TellActorRequest,
  type AttestNodeRequest,
  type AttestNodeResponse,
  type ChallengeNodeRequest,
  type ChallengeNodeResponse,
  type DeregisterNodeResponse,
  type HeartbeatResponse,
  type ListPeersResponse,
  type PushConfigResponse,
  type RegisterNodeResponse,
  type SealNodeEnvelope,
  type SyncConfigResponse,
  type TellActorResponse,
} from '../gen/orch/cluster/v1/cluster.js';
import { authMetadata, joinMetadata, sealPayload } from './envelope.ts';
import type { NodeKey } from './node-key.ts';

export interface CallCredentials {
  token: string;
  key: NodeKey;
}

type Unary<Req, Res> = (req: Req, md: Metadata, opts: Partial<CallOptions>, cb: (err: ServiceError | null, res: Res) => void) => unknown;

export class NodeClusterClient {
  readonly raw: NodeClusterServiceClient;

  constructor(
    readonly address: string,
    private readonly timeoutMs = 10_000,
    /** More channel options, e.g. `grpc.use_local_subchannel_pool` for a connection of its own (the benchmark). */
    channelOptions: Record<string, string | number> = {},
  ) {
    this.raw = new NodeClusterServiceClient(address, credentials.createInsecure(), {
      // A worker re-dials quickly when the controller comes back (netns cuts, restarts).
      'grpc.initial_reconnect_backoff_ms': 200,
      'grpc.max_reconnect_backoff_ms': 2000,
      ...channelOptions,
    });
  }

  private call<Req, Res>(fn: Unary<Req, Res>, req: Req, md: Metadata): Promise<Res> {
    return new Promise((resolve, reject) => {
      fn.call(this.raw, req, md, { deadline: Date.now() + this.timeoutMs }, (err, res) => (err ? reject(err) : resolve(res)));
    });
  }

  /** A sealed envelope for `bytes` and its metadata (tests use it to build hostile envelopes). */
  seal(bytes: Uint8Array, creds: CallCredentials): { envelope: SealNodeEnvelope; metadata: Metadata } {
    return { envelope: sealPayload(bytes, creds), metadata: authMetadata(creds.token) };
  }

  /** Sends a prepared envelope to a token-protected unary RPC. */
  send<Res>(method: 'registerNode' | 'heartbeat' | 'deregisterNode' | 'syncConfig' | 'pushConfig' | 'listPeers' | 'routeExecution' | 'tellActor', envelope: SealNodeEnvelope, metadata: Metadata): Promise<Res> {
    return this.call(this.raw[method] as unknown as Unary<SealNodeEnvelope, Res>, envelope, metadata);
  }

  private sealed<Res>(method: Parameters<NodeClusterClient['send']>[0], bytes: Uint8Array, creds: CallCredentials): Promise<Res> {
    const { envelope, metadata } = this.seal(bytes, creds);
    return this.send<Res>(method, envelope, metadata);
  }

  /** AttestNode, with the cluster's join token in metadata when given (docs/CLUSTER.md "Joining"). */
  attest(req: AttestNodeRequest, joinToken?: string): Promise<AttestNodeResponse> {
    return this.call(this.raw.attestNode as unknown as Unary<AttestNodeRequest, AttestNodeResponse>, req, joinMetadata(joinToken));
  }

  challenge(req: ChallengeNodeRequest): Promise<ChallengeNodeResponse> {
    return this.call(this.raw.challengeNode as unknown as Unary<ChallengeNodeRequest, ChallengeNodeResponse>, req, new Metadata());
  }

  register(req: RegisterNodeRequest, creds: CallCredentials): Promise<RegisterNodeResponse> {
    return this.sealed('registerNode', RegisterNodeRequest.encode(req).finish(), creds);
  }

  heartbeat(req: HeartbeatRequest, creds: CallCredentials): Promise<HeartbeatResponse> {
    return this.sealed('heartbeat', HeartbeatRequest.encode(req).finish(), creds);
  }

  deregister(req: DeregisterNodeRequest, creds: CallCredentials): Promise<DeregisterNodeResponse> {
    return this.sealed('deregisterNode', DeregisterNodeRequest.encode(req).finish(), creds);
  }

  syncConfig(creds: CallCredentials): Promise<SyncConfigResponse> {
    return this.sealed('syncConfig', SyncConfigRequest.encode({}).finish(), creds);
  }

  listPeers(req: ListPeersRequest, creds: CallCredentials): Promise<ListPeersResponse> {
    return this.sealed('listPeers', ListPeersRequest.encode(req).finish(), creds);
  }

  pushConfig(req: PushConfigRequest, creds: CallCredentials): Promise<PushConfigResponse> {
    return this.sealed('pushConfig', PushConfigRequest.encode(req).finish(), creds);
  }

  /** TellActor: wakes an actor this node holds (docs/CLUSTER.md "Messages to actors"). */
  tellActor(req: TellActorRequest, creds: CallCredentials): Promise<TellActorResponse> {
    return this.sealed('tellActor', TellActorRequest.encode(req).finish(), creds);
  }

  /** A server-streaming sealed call (ForwardExecution): the stream of the generated client. */
  stream<T>(method: 'forwardExecution', bytes: Uint8Array, creds: CallCredentials, options: Partial<CallOptions> = {}): ClientReadableStream<T> {
    const { envelope, metadata } = this.seal(bytes, creds);
    return (this.raw[method] as unknown as (e: SealNodeEnvelope, md: Metadata, o: Partial<CallOptions>) => ClientReadableStream<T>).call(this.raw, envelope, metadata, options);
  }

  close(): void {
    this.raw.close();
  }
}
