// The symbolic-link check shared by the VolumeService (src/volumes/paths.ts) and the fs.* tools
// (src/tools/paths.ts): the real path of the target and of its nearest existing parent must stay inside the root's
// real path, and a dangling link is refused (a write through it would create its target anywhere). It lives with
// the volumes so that volumes never import tools (issue 19: tools/builtin/fs ↔ volumes/service ↔ volumes/paths).
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';

function inside(root: string, p: string): boolean {
  return p === root || p.startsWith(root.endsWith(path.sep) ? root : `${root}${path.sep}`);
}

/** True when `host` (lexically under `rootHost`) reaches outside `rootHost` through a symbolic link. */
export async function escapesThroughLink(rootHost: string, host: string): Promise<boolean> {
  const root = await realpath(rootHost);
  try {
    if (!inside(root, await realpath(host))) return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    const link = await lstat(host).catch(() => undefined);
    if (link?.isSymbolicLink()) return true;
  }
  if (path.resolve(host) === path.resolve(rootHost)) return false;
  let dir = path.dirname(host);
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
