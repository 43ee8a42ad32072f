// The cluster gRPC server (port 50056, `spec.cluster.cluster_grpc_port`): NodeClusterService. Every method
// answers UNIMPLEMENTED until the cluster issue supplies its handler. Node-token and SealNodeEnvelope checks
// plug in as a `gate`, which runs before every handler (AttestNode and ChallengeNode must be let through by
// it: they carry no token).
import { Server, type ServerOptions } from '@grpc/grpc-js';
import { newGrpcServer } from '../../gateway/grpc/server-options.ts';
import { NodeClusterServiceService, type NodeClusterServiceServer } from '../../gen/orch/cluster/v1/cluster.js';
import { decodingSafely, guardService, type CallGate } from '../../gateway/grpc/guard.ts';
import { unimplementedService, withOverrides } from '../../gateway/grpc/unimplemented.ts';
import type { Logger } from '../../logging/logger.ts';

export interface ClusterServerOptions {
  /** NodeClusterService handlers that exist; the rest answer UNIMPLEMENTED. */
  handlers?: Partial<NodeClusterServiceServer>;
  /** Runs before every handler and may refuse the call by throwing an OrchError. */
  gate?: CallGate;
  logger: Logger;
}

export function addClusterService(server: Server, options: ClusterServerOptions): void {
  const logger = options.logger.child({ component: 'grpc', service: 'orch.cluster.v1.NodeClusterService' });
  const impl = withOverrides(unimplementedService<NodeClusterServiceServer>(NodeClusterServiceService), options.handlers);
  const guarded = guardService(NodeClusterServiceService, impl, options.gate ? { gate: options.gate, logger } : { logger });
  server.addService(decodingSafely(NodeClusterServiceService), guarded);
}

/** A new server with NodeClusterService; bind it with startGrpcServer. */
export function createClusterServer(options: ClusterServerOptions, serverOptions?: ServerOptions): Server {
  const server = newGrpcServer(serverOptions);
  addClusterService(server, options);
  return server;
}
