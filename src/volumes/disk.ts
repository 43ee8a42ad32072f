// Measuring and translating what is on disk for the volume service.
import type { Dirent, Stats } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { FileInfo, FileType } from './types.ts';

export interface TreeSize {
  bytes: number;
  files: number;
  directories: number;
}

/** Sum of the sizes of the regular files under `host` (itself included); symbolic links are not followed. */
export async function treeSize(host: string): Promise<TreeSize> {
  const out: TreeSize = { bytes: 0, files: 0, directories: 0 };
  let st: Stats;
  try {
    st = await lstat(host);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return out;
    throw err;
  }
  if (st.isFile()) return { bytes: st.size, files: 1, directories: 0 };
  if (!st.isDirectory()) return out;
  const stack = [host];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        out.directories += 1;
        stack.push(p);
      } else if (e.isFile()) {
        const s = await lstat(p).catch(() => undefined);
        if (s?.isFile()) {
          out.bytes += s.size;
          out.files += 1;
        }
      }
    }
  }
  return out;
}

/** Size of the regular file at `host`, 0 when there is none; EISDIR when it is a directory. */
export async function regularFileSize(host: string, shown: string): Promise<number> {
  try {
    const st = await lstat(host);
    if (st.isDirectory()) throw new OrchError(Errors.CONFLICT, `${shown} is a directory`, { details: { code: 'EISDIR' } });
    return st.isFile() ? st.size : 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
}

function typeOf(st: Stats): FileType {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'directory';
  if (st.isSymbolicLink()) return 'symlink';
  return 'other';
}

export function fileInfo(volumePath: string, st: Stats): FileInfo {
  return {
    name: volumePath === '/' ? '' : path.posix.basename(volumePath),
    path: volumePath,
    type: typeOf(st),
    size: st.isDirectory() ? 0 : st.size,
    mode: st.mode,
    ino: st.ino,
    nlink: st.nlink,
    mtime: st.mtime.toISOString(),
    atime: st.atime.toISOString(),
    ctime: st.ctime.toISOString(),
  };
}

/** Operating-system errors as the error catalogue's kinds, naming the caller's path (never the host path). */
export function translateFsError(err: unknown, shown: string): unknown {
  if (err instanceof OrchError) return err;
  const code = (err as NodeJS.ErrnoException)?.code;
  switch (code) {
    case 'ENOENT':
      return new OrchError(Errors.NOT_FOUND, `${shown} does not exist`, { details: { code: 'ENOENT' } });
    case 'EISDIR':
      return new OrchError(Errors.CONFLICT, `${shown} is a directory`, { details: { code: 'EISDIR' } });
    case 'ENOTDIR':
      return new OrchError(Errors.CONFLICT, `${shown}: a part of the path is not a directory`, { details: { code: 'ENOTDIR' } });
    case 'EEXIST':
      return new OrchError(Errors.CONFLICT, `${shown} already exists`, { details: { code: 'EEXIST' } });
    case 'ENOTEMPTY':
      return new OrchError(Errors.CONFLICT, `${shown} is a non-empty directory`, { details: { code: 'ENOTEMPTY' } });
    case 'EINVAL':
      return new OrchError(Errors.BAD_REQUEST, `${shown}: invalid operation (a directory cannot move into itself)`);
    case 'ENOSPC':
    case 'EDQUOT':
      return new OrchError(Errors.STORAGE_FULL, `${shown}: the node's disk is full (ENOSPC)`, { details: { code: 'ENOSPC' } });
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return new OrchError(Errors.FORBIDDEN, `${shown}: permission denied`);
  }
  return err;
}
