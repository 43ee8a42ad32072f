// Maps failures to gRPC statuses, the gRPC counterpart of ../http/errors.ts. Only OrchErrors show their message
// (their `spec.grpc` is the status code); anything else is answered as a bare INTERNAL so that no internal
// detail reaches the caller.
import { Metadata, status, type ServerErrorResponse } from '@grpc/grpc-js';
import { Errors, OrchError, isOrchError } from '../../errors/catalog.ts';
import { DependencyUnavailable, isOutage } from '../../errors/outage.ts';

/** Trailing metadata key carrying the catalogue code (`not_found`, `unauthenticated`, ...) of a failed call. */
export const ERROR_CODE_METADATA_KEY = 'orch-error-code';

/** The status object a handler's callback or `call.emit('error', ...)` takes. */
export function toGrpcError(err: unknown): ServerErrorResponse {
  // A dependency outage under a bare driver error or a 500-class OrchError (a stimulus' workflow_error) is
  // UNAVAILABLE, which clients retry, as HTTP answers it 503 (../http/errors.ts).
  if (!(err instanceof DependencyUnavailable) && isOutage(err) && (!isOrchError(err) || err.spec.http >= 500)) {
    err = new DependencyUnavailable('database', 'a dependency is unavailable; retry later', { cause: err });
  }
  const orch = isOrchError(err) ? err : undefined;
  const code = orch?.spec.grpc ?? status.INTERNAL;
  const details = orch?.message ?? 'internal error';
  const metadata = new Metadata();
  metadata.set(ERROR_CODE_METADATA_KEY, orch?.code ?? Errors.INTERNAL.code);
  return Object.assign(new Error(details), { code, details, metadata });
}

/** True for the statuses that mean a bug or an outage on our side, which deserve an error log line. */
export function isServerFault(err: unknown): boolean {
  if (!isOrchError(err)) return true;
  const code = err.spec.grpc;
  return code === status.INTERNAL || code === status.UNKNOWN || code === status.DATA_LOSS;
}

/** `/orch.runtime.v1.OrchRuntime/ExecuteAgent` → `OrchRuntime.ExecuteAgent`, for messages and logs. */
export function methodLabel(path: string): string {
  const [, service = '', method = ''] = path.split('/');
  return `${service.slice(service.lastIndexOf('.') + 1)}.${method}`;
}

export function notImplemented(path: string): OrchError {
  return new OrchError(Errors.NOT_IMPLEMENTED, `${methodLabel(path)} is not implemented yet`);
}
