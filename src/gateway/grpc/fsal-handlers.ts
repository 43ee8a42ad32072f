// FsalService on the runtime gRPC port (seed 000 "gRPC: FsalService and FuseMountService"): each RPC hands the
// request and the caller's tenant to the FsalService capability (src/fsal/service.ts), which does the ownership,
// policy, access-mode, quota and StorageEvent work. Refusals are catalogue errors mapped by toGrpcError, plus the
// POSIX errno they stand for in trailing metadata `fsal-errno` (the FUSE daemon answers the kernel with it).
import type { ServerErrorResponse, ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import type { FsalServiceServer } from '../../gen/orch/fsal/v1/fsal.js';
import { errnoOf } from '../../fsal/errors.ts';
import type { FsalCaller, FsalService } from '../../fsal/service.ts';
import type { Logger } from '../../logging/logger.ts';
import { findPrincipal } from './auth.ts';
import { isServerFault, toGrpcError } from './errors.ts';

/** Trailing metadata key with the errno of a refused FSAL call (ENOENT, ENOTEMPTY, ENOSPC, ...). */
export const FSAL_ERRNO_METADATA_KEY = 'fsal-errno';

/** The caller of an FSAL call: the tenant of the principal the auth gate found for it, if any. */
export function fsalCallerOf(call: object): FsalCaller {
  const principal = findPrincipal(call);
  return principal ? { tenantId: principal.tenantId } : {};
}

/** A refused FSAL call as its gRPC status, with the errno it stands for in `fsal-errno`. */
export function fsalGrpcError(err: unknown): ServerErrorResponse {
  const out = toGrpcError(err);
  const errno = errnoOf(err);
  if (errno) out.metadata?.set(FSAL_ERRNO_METADATA_KEY, errno);
  return out;
}

type Method = keyof FsalServiceServer & keyof FsalService;

export function fsalHandlers(fsal: FsalService, logger: Logger): FsalServiceServer {
  const log = logger.child({ component: 'grpc-fsal' });

  function unary<Req, Res>(name: Method, op: (caller: FsalCaller, req: Req) => Promise<Res>) {
    return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): void => {
      op(fsalCallerOf(call), call.request).then(
        (res) => callback(null, res),
        (err: unknown) => {
          if (isServerFault(err)) log.error({ err, method: name }, 'FSAL call failed');
          callback(fsalGrpcError(err));
        },
      );
    };
  }

  return {
    lookup: unary('lookup', (c, r) => fsal.lookup(c, r)),
    getAttr: unary('getAttr', (c, r) => fsal.getAttr(c, r)),
    readDir: unary('readDir', (c, r) => fsal.readDir(c, r)),
    read: unary('read', (c, r) => fsal.read(c, r)),
    write: unary('write', (c, r) => fsal.write(c, r)),
    create: unary('create', (c, r) => fsal.create(c, r)),
    remove: unary('remove', (c, r) => fsal.remove(c, r)),
    rename: unary('rename', (c, r) => fsal.rename(c, r)),
    mkDir: unary('mkDir', (c, r) => fsal.mkDir(c, r)),
    rmDir: unary('rmDir', (c, r) => fsal.rmDir(c, r)),
  };
}
