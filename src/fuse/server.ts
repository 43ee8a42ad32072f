// FuseMountService (seed 000, package orch.fuse.v1) on 127.0.0.1:50053 by default: the orchestrator's handle on
// the FUSE daemon. It listens on loopback only; the FSAL behind every mount does the authorization.
import { Server, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { newGrpcServer } from '../gateway/grpc/server-options.ts';
import {
  FuseMountServiceService,
  type FuseMountServiceServer,
  type MountRequest,
  type MountResponse,
  type UnmountRequest,
  type UnmountResponse,
} from '../gen/orch/fuse/v1/fuse.js';
import { toGrpcError } from '../gateway/grpc/errors.ts';
import type { Logger } from '../logging/logger.ts';
import type { MountManager } from './mounts.ts';

export const DEFAULT_FUSE_DAEMON_ADDRESS = '127.0.0.1:50053';

export function fuseMountHandlers(mounts: MountManager, logger: Logger): FuseMountServiceServer {
  const log = logger.child({ component: 'grpc-fuse' });
  const fail = (err: unknown, what: string) => {
    log.warn({ err }, `${what} refused`);
    return toGrpcError(err);
  };
  return {
    mount(call: ServerUnaryCall<MountRequest, MountResponse>, callback: sendUnaryData<MountResponse>): void {
      const r = call.request;
      Promise.resolve()
        .then(() => mounts.mount({ execution_id: r.execution_id, volume_id: r.volume_id, tenant_id: r.tenant_id }))
        .then(
          (mount_path) => callback(null, { mount_path }),
          (err: unknown) => callback(fail(err, 'Mount')),
        );
    },
    unmount(call: ServerUnaryCall<UnmountRequest, UnmountResponse>, callback: sendUnaryData<UnmountResponse>): void {
      const r = call.request;
      Promise.resolve()
        .then(() => mounts.unmount(r.execution_id, r.volume_id))
        .then(
          () => callback(null, {}),
          (err: unknown) => callback(fail(err, 'Unmount')),
        );
    },
  };
}

export function createFuseServer(mounts: MountManager, logger: Logger): Server {
  const server = newGrpcServer();
  server.addService(FuseMountServiceService, fuseMountHandlers(mounts, logger));
  return server;
}
