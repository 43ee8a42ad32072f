// FSAL failures as catalogue errors (src/errors/catalog.ts), each with the POSIX errno it stands for in `details`, so
// the FUSE daemon can answer the kernel precisely (ENOTEMPTY and EISDIR share FAILED_PRECONDITION on the wire).
// The gRPC handlers send the errno in trailing metadata `fsal-errno`.
import { status } from '@grpc/grpc-js';
import { Errors, OrchError, isOrchError, type ErrorSpec } from '../errors/catalog.ts';

export type FsalErrorKind =
  | 'not_found'
  | 'already_exists'
  | 'not_dir'
  | 'is_dir'
  | 'not_empty'
  | 'denied'
  | 'read_only'
  | 'no_space'
  | 'invalid'
  | 'escape';

/** The catalogue has no FAILED_PRECONDITION entry of its own; this is the FSAL's (not a directory, not empty, ...). */
const FAILED_PRECONDITION: ErrorSpec = { code: 'failed_precondition', http: 409, grpc: status.FAILED_PRECONDITION };

const KINDS: Record<FsalErrorKind, { spec: ErrorSpec; errno: string }> = {
  not_found: { spec: Errors.NOT_FOUND, errno: 'ENOENT' },
  already_exists: { spec: Errors.CONFLICT, errno: 'EEXIST' },
  not_dir: { spec: FAILED_PRECONDITION, errno: 'ENOTDIR' },
  is_dir: { spec: FAILED_PRECONDITION, errno: 'EISDIR' },
  not_empty: { spec: FAILED_PRECONDITION, errno: 'ENOTEMPTY' },
  denied: { spec: Errors.FORBIDDEN, errno: 'EACCES' },
  read_only: { spec: Errors.FORBIDDEN, errno: 'EROFS' },
  no_space: { spec: Errors.RESOURCE_EXHAUSTED, errno: 'ENOSPC' },
  invalid: { spec: Errors.BAD_REQUEST, errno: 'EINVAL' },
  escape: { spec: Errors.BAD_REQUEST, errno: 'EINVAL' },
};

export function fsalError(kind: FsalErrorKind, message: string, cause?: unknown): OrchError {
  const k = KINDS[kind];
  return new OrchError(k.spec, message, { details: { errno: k.errno }, ...(cause === undefined ? {} : { cause }) });
}

/** The errno an error stands for: from an FSAL error's details, or an OS error's code. */
export function errnoOf(err: unknown): string | undefined {
  if (isOrchError(err)) {
    // FSAL errors carry `errno`; the VolumeService's ENOSPC carries `code`.
    const d = err.details as { errno?: unknown; code?: unknown } | undefined;
    if (typeof d?.errno === 'string') return d.errno;
    return typeof d?.code === 'string' && /^E[A-Z]+$/.test(d.code) ? d.code : undefined;
  }
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^E[A-Z]+$/.test(code) ? code : undefined;
}

/** Operating-system errors of a disk operation on `what`, as FSAL errors; anything unexpected passes through. */
export function fromOsError(err: unknown, what: string): unknown {
  if (isOrchError(err)) return err;
  switch (errnoOf(err)) {
    case 'ENOENT':
      return fsalError('not_found', `${what}: no such file or directory`, err);
    case 'EEXIST':
      return fsalError('already_exists', `${what}: already exists`, err);
    case 'ENOTDIR':
      return fsalError('not_dir', `${what}: not a directory`, err);
    case 'EISDIR':
      return fsalError('is_dir', `${what}: is a directory`, err);
    case 'ENOTEMPTY':
      return fsalError('not_empty', `${what}: directory not empty`, err);
    case 'ENOSPC':
    case 'EDQUOT':
      return fsalError('no_space', `${what}: no space left on the volume`, err);
    case 'EACCES':
    case 'EPERM':
      return fsalError('denied', `${what}: permission denied`, err);
    default:
      return err;
  }
}

/** gRPC status name of an outcome, for StorageEvent rows. */
export function statusName(err: unknown): string {
  if (err === undefined) return 'OK';
  const code = isOrchError(err) ? err.spec.grpc : status.INTERNAL;
  return status[code] ?? String(code);
}
