// The runtime gRPC server (port 50051): OrchRuntime, FsalService and orch's FsalExtensionService on one grpc.Server, both behind the
// grpc_auth gate. Every method answers UNIMPLEMENTED until an issue supplies its handler through `handlers` or
// `fsal`; a supplied handler may be async and throw OrchError (mapped by toGrpcError).
import { Server, type ServerOptions } from '@grpc/grpc-js';
import { newGrpcServer } from './server-options.ts';
import { FsalServiceService, type FsalServiceServer } from '../../gen/orch/fsal/v1/fsal.js';
import { FSAL_DEFINITION, FSAL_EXTENSION_DEFINITION } from '../../fsal/wire.ts';
import type { FsalExtensionServiceServer } from '../../gen/orch/fsal/v1/fsal_extension.js';
import { OrchRuntimeService, type OrchRuntimeServer } from '../../gen/orch/runtime/v1/runtime.js';
import type { Logger } from '../../logging/logger.ts';
import { withAuth, type GrpcAuthOptions } from './auth.ts';
import { decodingSafely } from './guard.ts';
import { unimplementedService, withOverrides } from './unimplemented.ts';

export interface RuntimeServerOptions {
  /** OrchRuntime handlers that exist; the rest answer UNIMPLEMENTED. */
  handlers?: Partial<OrchRuntimeServer>;
  /** FsalService handlers that exist; the rest answer UNIMPLEMENTED. */
  fsal?: Partial<FsalServiceServer>;
  /** FsalExtensionService (an orch extension beside FsalService: streamed Writes) handlers; else UNIMPLEMENTED. */
  fsalExtension?: Partial<FsalExtensionServiceServer>;
  auth: GrpcAuthOptions;
  logger: Logger;
}

/** Adds OrchRuntime and FsalService to an existing server. */
export function addRuntimeServices(server: Server, options: RuntimeServerOptions): void {
  const runtimeLog = options.logger.child({ component: 'grpc', service: 'orch.runtime.v1.OrchRuntime' });
  const runtime = withOverrides(unimplementedService<OrchRuntimeServer>(OrchRuntimeService), options.handlers);
  server.addService(decodingSafely(OrchRuntimeService), withAuth(OrchRuntimeService, runtime, options.auth, runtimeLog));

  const fsalLog = options.logger.child({ component: 'grpc', service: 'orch.fsal.v1.FsalService' });
  const fsal = withOverrides(unimplementedService<FsalServiceServer>(FsalServiceService), options.fsal);
  server.addService(decodingSafely(FSAL_DEFINITION), withAuth(FSAL_DEFINITION, fsal, options.auth, fsalLog));

  const streamLog = options.logger.child({ component: 'grpc', service: 'orch.fsal.v1.FsalExtensionService' });
  const stream = withOverrides(unimplementedService<FsalExtensionServiceServer>(FSAL_EXTENSION_DEFINITION), options.fsalExtension);
  server.addService(FSAL_EXTENSION_DEFINITION, withAuth(FSAL_EXTENSION_DEFINITION, stream, options.auth, streamLog));
}

/** A new server with OrchRuntime and FsalService; bind it with startGrpcServer. */
export function createRuntimeServer(options: RuntimeServerOptions, serverOptions?: ServerOptions): Server {
  const server = newGrpcServer(serverOptions);
  addRuntimeServices(server, options);
  return server;
}
