// One catalogue of error codes, each with its HTTP and gRPC status, in the manner of fastify's lib/errors.js.
// Code that fails raises an OrchError (terminal) or a RetryableError; transports map them with toHttp/toGrpc.
// The status codes alone, not grpc-js's index: a module that needs only errors (PGlite's worker thread, through
// storage/retry.ts) then loads none of grpc-js and protobufjs (~0.9 MB of the bundle; issue 15 item 4: start-up).
import { Status as GrpcStatus } from '@grpc/grpc-js/build/src/constants.js';

export interface ErrorSpec {
  readonly code: string;
  readonly http: number;
  readonly grpc: GrpcStatus;
}

function spec(code: string, http: number, grpc: GrpcStatus): ErrorSpec {
  return { code, http, grpc };
}

export const Errors = {
  BAD_REQUEST: spec('bad_request', 400, GrpcStatus.INVALID_ARGUMENT),
  VALIDATION: spec('validation_failed', 422, GrpcStatus.INVALID_ARGUMENT),
  UNAUTHENTICATED: spec('unauthenticated', 401, GrpcStatus.UNAUTHENTICATED),
  FORBIDDEN: spec('forbidden', 403, GrpcStatus.PERMISSION_DENIED),
  NOT_FOUND: spec('not_found', 404, GrpcStatus.NOT_FOUND),
  CONFLICT: spec('conflict', 409, GrpcStatus.ALREADY_EXISTS),
  RESOURCE_EXHAUSTED: spec('resource_exhausted', 429, GrpcStatus.RESOURCE_EXHAUSTED),
  RATE_LIMITED: spec('rate_limited', 429, GrpcStatus.RESOURCE_EXHAUSTED),
  NOT_IMPLEMENTED: spec('not_implemented', 501, GrpcStatus.UNIMPLEMENTED),
  UNAVAILABLE: spec('unavailable', 503, GrpcStatus.UNAVAILABLE),
  INTERNAL: spec('internal', 500, GrpcStatus.INTERNAL),
  LEASE_LOST: spec('lease_lost', 409, GrpcStatus.ABORTED),
  CONFIG_INVALID: spec('config_invalid', 500, GrpcStatus.FAILED_PRECONDITION),
  /** A write would take a volume over its size limit (ENOSPC); nothing of it was written. */
  STORAGE_FULL: spec('storage_full', 507, GrpcStatus.RESOURCE_EXHAUSTED),
  /** A path leaves its volume (`..`, an absolute path outside it, a symbolic link pointing out). */
  PATH_OUTSIDE_BOUNDARY: spec('path_outside_boundary', 400, GrpcStatus.INVALID_ARGUMENT),
  /** A request body or manifest larger than its limit (docs/SECURITY.md "Input bounds and bad input"). */
  PAYLOAD_TOO_LARGE: spec('payload_too_large', 413, GrpcStatus.RESOURCE_EXHAUSTED),
  /** A remote provider the node depends on (the payment provider) failed or refused the node's credentials. */
  BAD_GATEWAY: spec('bad_gateway', 502, GrpcStatus.UNAVAILABLE),
} as const;

export type ErrorKind = keyof typeof Errors;

/** A failure that will not succeed on retry. `message` is safe to show to the caller. */
export class OrchError extends Error {
  readonly spec: ErrorSpec;
  readonly details: unknown;

  constructor(kind: ErrorSpec, message: string, options?: { cause?: unknown; details?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'OrchError';
    this.spec = kind;
    this.details = options?.details;
  }

  get code(): string {
    return this.spec.code;
  }
}

/** A failure that may succeed if the same operation is tried again (serialization conflict, peer down). */
export class RetryableError extends OrchError {
  constructor(message: string, options?: { cause?: unknown; details?: unknown; kind?: ErrorSpec }) {
    super(options?.kind ?? Errors.UNAVAILABLE, message, options);
    this.name = 'RetryableError';
  }
}

export function isOrchError(err: unknown): err is OrchError {
  return err instanceof OrchError;
}

/** The JSON error body every HTTP route answers with: `{"error": ..., "details"?: ...}`. */
export function errorBody(err: OrchError): { error: string; details?: unknown } {
  return err.details === undefined ? { error: err.message } : { error: err.message, details: err.details };
}
