// The symbolic-link check shared by the VolumeService (src/volumes/paths.ts) and the fs.* tools
// (src/tools/paths.ts): the real path of the target and of its nearest existing parent must stay inside the root's
// real path, and a dangling link is refused (a write through it would create its target anywhere). It lives with
// the volumes so that volumes never import tools (issue 19: tools/builtin/fs ↔ volumes/service ↔ volumes/paths).
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';

/**
 * Real paths of volume roots, by the root's path. A root is a directory orch made under its data directory; nothing a
 * tenant can do inside a volume changes what its root resolves to, so it is resolved once rather than on every call
 * (an FSAL Write resolved it twice: realpath was the largest native cost of a small call). Bounded: the oldest entry
 * goes first. A deleted volume's calls are refused before any path is resolved (its row is gone).
 */
const realRoots = new Map<string, string>();
const REAL_ROOTS_MAX = 4096;

async function realRoot(rootHost: string): Promise<string> {
  const known = realRoots.get(rootHost);
  if (known !== undefined) return known;
  const real = await realpath(rootHost);
  if (realRoots.size >= REAL_ROOTS_MAX) realRoots.delete(realRoots.keys().next().value as string);
  realRoots.set(rootHost, real);
  return real;
}

function inside(root: string, p: string): boolean {
  return p === root || p.startsWith(root.endsWith(path.sep) ? root : `${root}${path.sep}`);
}

/** True when `host` (lexically under `rootHost`) reaches outside `rootHost` through a symbolic link. */
export async function escapesThroughLink(rootHost: string, host: string): Promise<boolean> {
  const root = await realRoot(rootHost);
  let resolved = false;
  try {
    if (!inside(root, await realpath(host))) return true;
    resolved = true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    const link = await lstat(host).catch(() => undefined);
    if (link?.isSymbolicLink()) return true;
  }
  const rootPath = path.resolve(rootHost);
  if (path.resolve(host) === rootPath) return false;
  let dir = path.dirname(host);
  // A target that resolved whose parent is the root itself (a name at the top of the volume, or the directory an entry
  // operation resolves for a name one level down): the root exists (the target was reached through it) and its real
  // path is the one resolved once above, so no second realpath of it. A target that did not resolve walks up as
  // below, so a root removed under us is still found missing rather than taken as present.
  if (resolved && path.resolve(dir) === rootPath) return false;
  for (;;) {
    try {
      return !inside(root, await realpath(dir));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      const up = path.dirname(dir);
      if (up === dir) return false;
      dir = up;
    }
  }
}
