// The sandbox spawner's own process (spawner.ts forks it, small, at the node's start). It forks and execs each
// sandbox (bwrap, and slirp4netns for one with network) for the node, which then never forks itself: a fork copies
// the page tables of the process that forks, and from a node of ~170 MB that took 27–60 ms of the event loop per
// sandbox (issue 24). Messages: `spawn` in; `spawned` | `failed`, then `out` chunks and `close` out. The sandboxes'
// own process groups are killed by the node directly (same pid namespace). When the node goes away (the IPC channel
// closes) this process kills every sandbox it started and exits; bwrap's --die-with-parent covers a SIGKILL of it.
import { spawn, type ChildProcess } from 'node:child_process';
import { connectSandbox, type SandboxNet } from './sandbox-net.ts';

export interface SpawnMessage {
  op: 'spawn';
  id: number;
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  uid?: number;
  gid?: number;
  /** Attach slirp4netns once bwrap reports the namespace (bwrap --info-fd 3 --block-fd 4). */
  slirp?: { bin: string; userns: boolean };
}

export type SpawnerEvent =
  | { ev: 'spawned'; id: number; pid: number }
  | { ev: 'failed'; id: number; message: string; network: boolean }
  | { ev: 'out'; id: number; fd: 1 | 2; data: Uint8Array }
  | { ev: 'close'; id: number; code: number | null; signal: NodeJS.Signals | null };

const live = new Map<number, ChildProcess>();

function send(e: SpawnerEvent): void {
  if (process.connected) process.send!(e);
}

function killGroup(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

async function start(m: SpawnMessage): Promise<void> {
  let child: ChildProcess;
  try {
    child = spawn(m.file, m.args, {
      cwd: m.cwd,
      env: m.env,
      detached: true, // own process group: the node kills the whole group
      stdio: m.slirp ? ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'],
      ...(m.uid !== undefined && m.gid !== undefined ? { uid: m.uid, gid: m.gid } : {}),
    });
  } catch (err) {
    return send({ ev: 'failed', id: m.id, message: (err as Error).message, network: false });
  }
  let net: SandboxNet | undefined;
  let spawned = false;
  child.stdout?.on('data', (c: Buffer) => send({ ev: 'out', id: m.id, fd: 1, data: c }));
  child.stderr?.on('data', (c: Buffer) => send({ ev: 'out', id: m.id, fd: 2, data: c }));
  child.once('close', (code, signal) => {
    net?.stop();
    live.delete(m.id);
    if (spawned) send({ ev: 'close', id: m.id, code, signal });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', (err) => reject(new Error(`starting ${m.file} failed: ${err.message}`)));
    });
  } catch (err) {
    return send({ ev: 'failed', id: m.id, message: (err as Error).message, network: false });
  }
  live.set(m.id, child);
  if (m.slirp) {
    try {
      net = await connectSandbox(child, m.slirp);
    } catch (err) {
      killGroup(child);
      return send({ ev: 'failed', id: m.id, message: (err as Error).message, network: true });
    }
    if (child.exitCode !== null || child.signalCode !== null) net.stop();
  }
  spawned = true;
  send({ ev: 'spawned', id: m.id, pid: child.pid! });
  // Closed before `spawned` was sent (a command that ended at once): its close comes now.
  if (!live.has(m.id)) send({ ev: 'close', id: m.id, code: child.exitCode, signal: child.signalCode });
}

process.on('message', (m: SpawnMessage) => {
  if (m?.op === 'spawn') void start(m); // never-rejects: start() reports every failure as a message
});
process.on('disconnect', () => {
  for (const child of live.values()) killGroup(child);
  process.exit(0);
});
send({ ev: 'spawned', id: 0, pid: process.pid }); // ready
