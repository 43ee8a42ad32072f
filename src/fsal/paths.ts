// FSAL paths (docs/PROTO.md, orch.fsal.v1): relative to the volume root, `/`-separated, no `.` or `..` segments; a
// leading `/` is ignored, so `` and `/` both name the root. Anything else is refused before the disk is touched, so a
// request can never name a file outside its volume lexically (symbolic links are the volume layer's concern).
import path from 'node:path';
import { fsalError } from './errors.ts';

/** The canonical form: segments joined by `/`, `` for the root. Throws INVALID_ARGUMENT (path_outside_boundary). */
export function normalizeFsalPath(raw: string, field = 'path'): string {
  if (raw.includes('\0')) throw fsalError('invalid', `${field} contains a NUL byte`);
  const segments = raw.split('/').filter((s) => s !== '');
  for (const s of segments) {
    if (s === '..') throw fsalError('escape', `${field} ${JSON.stringify(raw)} leaves the volume (\`..\` is not allowed)`);
    if (s === '.') throw fsalError('invalid', `${field} ${JSON.stringify(raw)} contains a \`.\` segment`);
  }
  const out = segments.join('/');
  if (Buffer.byteLength(out) > 4096) throw fsalError('invalid', `${field} is longer than 4096 bytes`);
  return out;
}

/** Where the agent sees `rel` of a volume mounted at `mountPath`, for the manifest's filesystem globs. */
export function sandboxPathOf(mountPath: string, rel: string): string {
  return rel === '' ? path.posix.normalize(mountPath) : path.posix.join(mountPath, rel);
}

export function parentOf(rel: string): string {
  const i = rel.lastIndexOf('/');
  return i < 0 ? '' : rel.slice(0, i);
}

export function baseName(rel: string): string {
  return rel.slice(rel.lastIndexOf('/') + 1);
}
