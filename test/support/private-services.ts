// Private PostgreSQL and Redis servers for tests that kill, restart or pause a dependency. The shared servers on
// 5432/6379 must never be touched, so each of these runs from its own temp dir on a random port and is removed
// at cleanup. `kill()` takes every process of the server down at once (SIGKILL), which is what a crash or an OOM
// kill looks like to the clients (ECONNRESET, no goodbye message).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

/** A free TCP port on 127.0.0.1 (there is a small race until the server binds it; tests accept it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The bin directory of the newest PostgreSQL installed under /usr/lib/postgresql. */
export function postgresBinDir(): string {
  const versions = readdirSync('/usr/lib/postgresql')
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  if (!versions[0]) throw new Error('no PostgreSQL under /usr/lib/postgresql');
  return path.join('/usr/lib/postgresql', versions[0], 'bin');
}

/** uid/gid of the `postgres` user: PostgreSQL refuses to run as root. */
function postgresUser(): { uid: number; gid: number } {
  const out = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (out.status !== 0 || gid.status !== 0) throw new Error('no postgres user');
  return { uid: Number(out.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Pids whose parent is `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name (field 2) may hold spaces; the parent pid is the second field after its closing paren.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/**
 * Sends `signal` to a server and every process it forked. PostgreSQL's backends call setsid(), so a process-group
 * kill misses them; for SIGKILL the server is stopped first so that it forks nothing new and notices nothing
 * before its children are gone (clients then see a reset, not a "postmaster exit" message).
 */
function signalTree(child: ChildProcess, signal: NodeJS.Signals): void {
  const pid = child.pid;
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  if (signal === 'SIGKILL') signalPid(pid, 'SIGSTOP');
  for (const c of childrenOf(pid)) signalPid(c, signal);
  signalPid(pid, signal);
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

async function waitUntil(probe: () => Promise<boolean>, ms: number, what: string, log: () => string): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not up after ${ms} ms; log:\n${log()}`);
    await sleep(100);
  }
}

export interface PrivateServer {
  readonly port: number;
  /** SIGKILL to every process of the server: clients see their connections reset. Resolves once it is gone. */
  kill(): Promise<void>;
  /** Starts the server again on the same port and data; resolves once it answers. */
  start(): Promise<void>;
  /** SIGSTOP / SIGCONT: the server holds its connections but answers nothing (a freeze, not a crash). */
  pause(): void;
  resume(): void;
  isRunning(): boolean;
  /** The server's recent output, for failure messages. */
  log(): string;
  /** Kills the server and removes its files. Idempotent. */
  cleanup(): Promise<void>;
}

export interface PrivatePostgres extends PrivateServer {
  /** postgres://postgres@127.0.0.1:<port>/<database> (trust auth). Default database `postgres`. */
  url(database?: string): string;
  /** Creates a database (random name when none is given) and answers its URL. */
  createDatabase(name?: string): Promise<string>;
}

export interface PrivateRedis extends PrivateServer {
  readonly url: string;
}

/** A server child process, restartable on the same arguments. */
class ServerProcess {
  private child: ChildProcess | undefined;
  private output = '';

  constructor(
    private readonly command: string,
    private readonly args: string[],
    private readonly options: { uid?: number; gid?: number; cwd?: string },
  ) {}

  launch(): void {
    const child = spawn(this.command, this.args, { ...this.options, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (d: Buffer): void => {
      this.output = (this.output + d.toString()).slice(-20_000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('error', (err) => keep(Buffer.from(`spawn error: ${err.message}\n`)));
    this.child = child;
  }

  running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    signalTree(child, 'SIGKILL');
    await exited(child);
  }

  signal(signal: NodeJS.Signals): void {
    if (this.child) signalTree(this.child, signal);
  }

  log(): string {
    return this.output;
  }
}

/**
 * Starts `server` (launch, then wait until `answers` says yes) and answers its PrivateServer controls, or, when the
 * first start fails, cleans up (kills it, removes `dir`) and rethrows. Shared by the PostgreSQL and Redis starters so
 * both restart, freeze and clean up the same way.
 */
async function startedServer(
  server: ServerProcess,
  spec: { port: number; dir: string; answers: () => Promise<boolean>; timeoutMs: number; what: string },
): Promise<PrivateServer> {
  const start = async (): Promise<void> => {
    if (server.running()) return;
    server.launch();
    await waitUntil(spec.answers, spec.timeoutMs, `${spec.what} on ${spec.port}`, () => server.log());
  };
  let cleaned: Promise<void> | undefined;
  const handle: PrivateServer = {
    port: spec.port,
    kill: () => server.kill(),
    start,
    pause: () => server.signal('SIGSTOP'),
    resume: () => server.signal('SIGCONT'),
    isRunning: () => server.running(),
    log: () => server.log(),
    cleanup() {
      cleaned ??= server.kill().then(() => rmSync(spec.dir, { recursive: true, force: true }));
      return cleaned;
    },
  };
  try {
    await start();
  } catch (err) {
    await handle.cleanup();
    throw err;
  }
  return handle;
}

/**
 * initdb into a temp dir and start `postgres` on a random port (trust auth, user postgres, fsync off: a process kill keeps the OS cache, so nothing committed is lost). The server
 * listens on 127.0.0.1 only and keeps its socket in the temp dir.
 */
export async function startPrivatePostgres(opts: { startTimeoutMs?: number } = {}): Promise<PrivatePostgres> {
  const bin = postgresBinDir();
  const user = postgresUser();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'orch-pg-'));
  chownSync(dir, user.uid, user.gid);
  const data = path.join(dir, 'data');
  const init = spawnSync(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--no-instructions'], {
    uid: user.uid,
    gid: user.gid,
    cwd: dir,
    encoding: 'utf8',
  });
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  }
  const port = await freePort();
  const server = new ServerProcess(
    path.join(bin, 'postgres'),
    ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200'],
    { uid: user.uid, gid: user.gid, cwd: dir },
  );
  const url = (database = 'postgres'): string => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const answers = async (): Promise<boolean> => {
    const client = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 2000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      return true;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  const controls = await startedServer(server, { port, dir, answers, timeoutMs: opts.startTimeoutMs ?? 60_000, what: 'private PostgreSQL' });
  return {
    ...controls,
    url,
    async createDatabase(name = `orch_test_${Math.random().toString(36).slice(2, 10)}`) {
      const client = new pg.Client({ connectionString: url() });
      client.on('error', () => undefined);
      await client.connect();
      try {
        // Our own name of [a-z0-9_]: safe to interpolate (CREATE DATABASE takes no parameters).
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end().catch(() => undefined);
      }
      return url(name);
    },
  };
}

/** `redis-server` on a random port, no persistence: a restart loses everything, as a crashed cache would. */
export async function startPrivateRedis(opts: { startTimeoutMs?: number } = {}): Promise<PrivateRedis> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'orch-redis-'));
  const port = await freePort();
  const server = new ServerProcess(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--dir', dir],
    { cwd: dir },
  );
  const answers = (): Promise<boolean> =>
    new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      let reply = '';
      const done = (ok: boolean): void => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(2000, () => done(false));
      socket.on('error', () => done(false));
      socket.on('connect', () => socket.write('PING\r\n'));
      socket.on('data', (d) => {
        reply += d.toString();
        if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
      });
    });
  const controls = await startedServer(server, { port, dir, answers, timeoutMs: opts.startTimeoutMs ?? 30_000, what: 'private Redis' });
  return { ...controls, url: `redis://127.0.0.1:${port}` };
}
