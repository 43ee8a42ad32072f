// Paths inside a volume. A caller's path is relative to the volume root (`a/b.txt` and `/a/b.txt` are the same
// file). `..` that would climb above the root is refused (not clamped), NUL bytes are refused, and the symlink check
// is the one the fs.* tools use too (./containment.ts): the real path of the target and of its nearest existing
// parent must stay inside the root's real path, and a dangling link is refused.
import path from 'node:path';
import { Errors, OrchError } from '../errors/catalog.ts';
import { escapesThroughLink } from './containment.ts';

const MAX_PATH = 4096;

/** `/`-rooted normal form of a caller's path; throws PATH_OUTSIDE_BOUNDARY when it climbs above the root. */
export function normalizeVolumePath(requested: string): string {
  if (typeof requested !== 'string') throw new OrchError(Errors.BAD_REQUEST, 'path must be a string');
  if (requested.length > MAX_PATH) throw new OrchError(Errors.BAD_REQUEST, `path is longer than ${MAX_PATH} characters`);
  if (requested.includes('\0')) throw new OrchError(Errors.BAD_REQUEST, 'path must not contain NUL bytes');
  const parts: string[] = [];
  for (const seg of requested.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (parts.length === 0) throw new OrchError(Errors.PATH_OUTSIDE_BOUNDARY, `${requested} is outside the volume`);
      parts.pop();
      continue;
    }
    parts.push(seg);
  }
  return `/${parts.join('/')}`;
}

export interface VolumePath {
  /** `/`-rooted path inside the volume. */
  path: string;
  /** Absolute path on the host. */
  host: string;
  isRoot: boolean;
}

/** Maps a caller's path onto the host directory `root`, refusing `..` and symbolic-link escapes. */
export async function resolveInVolume(root: string, requested: string, mode: 'read' | 'write'): Promise<VolumePath> {
  const p = normalizeVolumePath(requested);
  const host = path.join(root, ...p.split('/').filter(Boolean));
  if (await escapesThroughLink(root, host)) throw new OrchError(Errors.PATH_OUTSIDE_BOUNDARY, `${p} resolves (through a symbolic link) outside the volume`);
  return { path: p, host, isRoot: path.resolve(host) === path.resolve(root) };
}

/**
 * The entry itself at a path (not what a symbolic link there points to): its parent directory is resolved with the
 * symlink check and the last name is joined on. For operations that act on the link itself — lstat, delete, the
 * source of a move — so that a link pointing outside can be seen and removed, never followed.
 */
export async function resolveEntry(root: string, requested: string): Promise<VolumePath> {
  const p = normalizeVolumePath(requested);
  if (p === '/') return resolveInVolume(root, p, 'write');
  const parent = await resolveInVolume(root, path.posix.dirname(p), 'write');
  return { path: p, host: path.join(parent.host, path.posix.basename(p)), isRoot: false };
}
