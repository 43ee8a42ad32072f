// User-mode networking for a bubblewrap sandbox that is allowed network. Every sandbox has its own network namespace
// (`--unshare-net`): sharing the host's would hand it the host's loopback services (PostgreSQL with trust auth on
// 127.0.0.1:5432, Redis, the node's own ports). A sandbox with network gets a slirp4netns (Debian package
// slirp4netns; scripts/setup-podman.sh installs it) attached to its namespace before its command runs: a tap device
// 10.0.2.100/24 whose traffic slirp4netns re-sends from ordinary host sockets, with `--disable-host-loopback` so
// that the gateway 10.0.2.2 does NOT lead to the host's 127.0.0.1. Addresses the host reaches on other interfaces
// stay reachable, as from any machine on the network.
//
// The handshake: bwrap `--info-fd` reports the sandbox's first pid (the netns to join), `--block-fd` holds the
// command until a byte arrives, slirp4netns `--ready-fd` says the interface is configured, and its `--exit-fd` (our
// end of a socket pair) ends it when the sandbox ends or the orchestrator dies. Any failure is an error: the sandbox
// is killed and never runs with the host's network instead.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

/** fds of bwrap's stdio array used for the handshake (after stdin, stdout, stderr). */
export const BWRAP_INFO_FD = 3;
export const BWRAP_BLOCK_FD = 4;

/** How long the network may take to come up before the sandbox fails (slirp4netns usually needs a few ms). */
const READY_TIMEOUT_MS = 10_000;

export interface SandboxNet {
  /** Ends slirp4netns (idempotent). */
  stop(): void;
}

export class SandboxNetworkError extends Error {
  override readonly name = 'SandboxNetworkError';
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new SandboxNetworkError(`${what} took more than ${ms} ms`)), ms);
    }),
  ]);
}

/** The sandbox's first pid from bwrap's `--info-fd` JSON (written once the namespaces exist). */
export async function readChildPid(info: Readable): Promise<number> {
  const text = await withTimeout(new Promise<string>((resolve, reject) => {
    let buf = '';
    info.setEncoding('utf8');
    info.on('data', (c: string) => (buf += c));
    info.once('end', () => resolve(buf));
    info.once('error', reject);
  }), READY_TIMEOUT_MS, 'bubblewrap reporting the sandbox pid');
  const m = /"child-pid"\s*:\s*(\d+)/.exec(text);
  if (!m) throw new SandboxNetworkError(`bubblewrap did not report the sandbox pid (it said ${JSON.stringify(text.slice(0, 200))})`);
  return Number(m[1]);
}

/**
 * Starts slirp4netns on the network namespace of `pid` and resolves once the tap device is configured. `userns`:
 * the sandbox has its own user namespace and the orchestrator is not root, so slirp4netns must join it to enter
 * the network namespace.
 */
export async function attachSlirp(o: { bin: string; pid: number; userns: boolean }): Promise<SandboxNet> {
  const args = [
    '--configure', '--mtu=65520', '--disable-host-loopback', '--enable-sandbox', '--enable-seccomp',
    '--ready-fd=3', '--exit-fd=4',
    ...(o.userns ? [`--userns-path=/proc/${o.pid}/ns/user`] : []),
    String(o.pid), 'tap0',
  ];
  const child: ChildProcess = spawn(o.bin, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-2000)));
  const exitFd = child.stdio[4] as Writable | null;
  exitFd?.on('error', () => undefined);
  let stopped = false;
  const net: SandboxNet = {
    stop: () => {
      if (stopped) return;
      stopped = true;
      exitFd?.destroy(); // slirp4netns exits when its exit fd closes
      child.kill('SIGKILL');
    },
  };
  const ready = new Promise<void>((resolve, reject) => {
    const readyFd = child.stdio[3] as Readable | null;
    readyFd?.once('data', () => resolve());
    readyFd?.on('error', () => undefined);
    child.once('error', (err) => reject(new SandboxNetworkError(`slirp4netns (${o.bin}) could not start: ${err.message}`)));
    child.once('exit', (code, signal) =>
      reject(new SandboxNetworkError(`slirp4netns exited (${code ?? signal}) before the network was up: ${stderr.trim().split('\n').slice(-3).join(' / ') || 'no message'}`)));
  });
  try {
    await withTimeout(ready, READY_TIMEOUT_MS, 'slirp4netns configuring the sandbox network');
  } catch (err) {
    net.stop();
    throw err;
  }
  return net;
}

/**
 * The handshake for a bwrap child spawned with `--info-fd 3 --block-fd 4`: reads its pid, attaches slirp4netns,
 * then releases the command. Rejects (the caller kills the sandbox) when any step fails.
 */
export async function connectSandbox(bwrap: ChildProcess, o: { bin: string; userns: boolean }): Promise<SandboxNet> {
  const info = bwrap.stdio[BWRAP_INFO_FD] as Readable | null;
  const block = bwrap.stdio[BWRAP_BLOCK_FD] as Writable | null;
  if (!info || !block) throw new SandboxNetworkError('bubblewrap was started without its handshake fds');
  block.on('error', () => undefined);
  const pid = await readChildPid(info);
  const net = await attachSlirp({ bin: o.bin, pid, userns: o.userns });
  block.end('1');
  return net;
}
