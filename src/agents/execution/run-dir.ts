// Where an execution's run directory (the gateway socket the sandbox's bootstrap talks to) lives on the host.
//
// Linux caps a unix socket path at 107 bytes (sun_path) and Node's listen() cuts a longer path silently: with the
// socket under `<dataDir>/run/<execution_id>/` a data dir over ~45 characters made a socket named `gatewa`, and
// every execution ended "sandbox exited with code 1 before asking for work" (issue 15). So the run directories live
// under a short directory the node owns, `/tmp/orch-run-<12 hex of the data dir's path>/` (mode 0700; the same for a
// restarted node, so it finds its own), whatever the data dir's length. A path that would still be too long, or a
// directory of that name that someone else made, fails the execution with a reason that says so.
import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { GATEWAY_SOCKET_NAME } from '../runtime/types.ts';

/** sun_path is 108 bytes with the terminating NUL. */
export const UNIX_SOCKET_PATH_MAX = 107;
const BASE = '/tmp';
const PREFIX = 'orch-run-';
/** A file in the root naming the data dir it serves, so that a later node can tell a leftover from a live root. */
const MARKER = 'data-dir';

/** The node's socket root for a data dir: short, stable across restarts, distinct per data dir. */
export function nodeRunRoot(dataDir: string): string {
  const id = createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 12);
  return path.join(BASE, `${PREFIX}${id}`);
}

function isPrivateDirOfMine(st: { isDirectory(): boolean; uid: number; mode: number }): boolean {
  const uid = process.getuid?.();
  return st.isDirectory() && (uid === undefined || st.uid === uid) && (st.mode & 0o077) === 0;
}

/** Makes the root (0700) or checks that an existing one is this user's private directory, not a planted one. */
async function ensureRoot(root: string, dataDir: string): Promise<void> {
  const made = await mkdir(root, { mode: 0o700 }).then(
    () => true,
    (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
      return false;
    },
  );
  if (!isPrivateDirOfMine(await lstat(root))) {
    throw new Error(`the node's socket directory ${root} exists but is not a private (0700) directory of this user; remove it and retry`);
  }
  if (made) await writeFile(path.join(root, MARKER), path.resolve(dataDir));
}

/**
 * At node start: makes this node's root and removes the roots of nodes that cannot come back, those whose data dir
 * no longer exists (a node killed with SIGKILL never removes its own; tests delete the data dir after).
 */
export async function prepareNodeRunRoot(dataDir: string): Promise<void> {
  await ensureRoot(nodeRunRoot(dataDir), dataDir);
  const names = await readdir(BASE).catch(() => [] as string[]);
  for (const name of names.filter((n) => n.startsWith(PREFIX))) {
    const root = path.join(BASE, name);
    const st = await lstat(root).catch(() => undefined);
    if (!st || !isPrivateDirOfMine(st)) continue;
    const served = await readFile(path.join(root, MARKER), 'utf8').catch(() => undefined);
    if (served === undefined) continue;
    if (await stat(served).then(() => true, (err: NodeJS.ErrnoException) => err.code !== 'ENOENT')) continue;
    await rm(root, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** The run directory of one execution (made), whose gateway socket path is guaranteed to fit in sun_path. */
export async function executionRunDir(dataDir: string, executionId: string): Promise<string> {
  const root = nodeRunRoot(dataDir);
  const dir = path.join(root, executionId);
  const socket = path.join(dir, GATEWAY_SOCKET_NAME);
  if (Buffer.byteLength(socket) > UNIX_SOCKET_PATH_MAX) {
    throw new Error(`the gateway socket path ${socket} is ${Buffer.byteLength(socket)} bytes; unix sockets allow ${UNIX_SOCKET_PATH_MAX}`);
  }
  await ensureRoot(root, dataDir);
  await mkdir(dir, { recursive: true });
  return dir;
}

/** Removes the node's socket root (at shutdown, after the sandboxes are gone). */
export function removeNodeRunRoot(dataDir: string): Promise<void> {
  return rm(nodeRunRoot(dataDir), { recursive: true, force: true });
}
