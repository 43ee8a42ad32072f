// Starts sandbox processes from a small helper process (spawner-child.ts) instead of the node itself (issue 24).
// child_process.spawn forks synchronously on the event loop, and a fork copies the page tables of the process that
// forks: from a node of ~170 MB RSS that cost 27–60 ms of blocked loop and system CPU per sandbox, the largest item
// of a node's profile with a hundred executions starting. The helper is forked once, while the node is still small,
// and forks the sandboxes from its ~40 MB. Output and exit come back over its IPC channel; the node kills a
// sandbox's process group itself (same pid namespace). If the helper dies, its sandboxes die with it (bwrap
// --die-with-parent) and are reported closed; the next start forks a new helper.
import { fork, type ChildProcess } from 'node:child_process';
import type { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../logging/logger.ts';
import type { SpawnerEvent, SpawnMessage } from './spawner-child.ts';

/** What the runtime needs of a sandbox's process, whether the node spawned it or the helper did. */
export interface SandboxProcess {
  readonly pid?: number | undefined;
  stdout: EventEmitter | null;
  stderr: EventEmitter | null;
  exitCode: number | null;
  signalCode: NodeJS.Signals | null;
  kill(signal: NodeJS.Signals): void;
}

export interface SpawnedSandbox {
  child: SandboxProcess;
  closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export type SpawnRequest = Omit<SpawnMessage, 'op' | 'id'>;

/** The spawn failed; `network`: bwrap started but its network could not be made. */
export class SpawnFailed extends Error {
  constructor(
    message: string,
    readonly network: boolean,
  ) {
    super(message);
  }
}

class RemoteProcess implements SandboxProcess {
  pid: number | undefined;
  // Streams, so output that arrives before the runtime attaches its 'data' listener waits for it (as a child's pipes do).
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;

  kill(signal: NodeJS.Signals): void {
    if (this.pid === undefined) return;
    try {
      process.kill(this.pid, signal);
    } catch {
      // gone already
    }
  }
}

interface Pending {
  proc: RemoteProcess;
  started: { resolve: () => void; reject: (err: Error) => void };
  close: (r: { code: number | null; signal: NodeJS.Signals | null }) => void;
  spawned: boolean;
}

function helperEntry(): { file: string; execArgv: string[] } {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) {
    // Running from the sources (tsx): the helper is TypeScript too.
    return { file: here.replace(/spawner\.ts$/, 'spawner-child.ts'), execArgv: ['--import', import.meta.resolve('tsx')] };
  }
  return { file: here.replace(/spawner\.js$/, 'spawner-child.js'), execArgv: [] };
}

export class SandboxSpawner {
  private helper: ChildProcess | undefined;
  private ready: Promise<ChildProcess> | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  constructor(private readonly log: Logger) {}

  /** Forks the helper now (while the node is small) rather than at the first sandbox. */
  warm(): void {
    this.connect().catch((err: unknown) => this.log.warn({ err }, 'the sandbox spawner could not start; it is retried at the next sandbox'));
  }

  private connect(): Promise<ChildProcess> {
    if (this.ready) return this.ready;
    const { file, execArgv } = helperEntry();
    const child = fork(file, [], { execArgv, serialization: 'advanced', stdio: ['ignore', 'ignore', 'inherit', 'ipc'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    this.helper = child;
    this.ready = new Promise<ChildProcess>((resolve, reject) => {
      const onFirst = (e: SpawnerEvent): void => {
        if (e.ev === 'spawned' && e.id === 0) {
          child.off('message', onFirst);
          resolve(child);
        }
      };
      child.on('message', onFirst);
      child.once('error', reject);
      child.once('exit', (code, signal) => reject(new Error(`the sandbox spawner exited (${code ?? signal}) before it was ready`)));
    });
    this.ready.catch(() => undefined);
    child.on('message', (e: SpawnerEvent) => this.onEvent(e));
    child.on('error', (err) => this.log.warn({ err }, 'sandbox spawner error'));
    child.once('exit', (code, signal) => {
      if (this.helper === child) {
        this.helper = undefined;
        this.ready = undefined;
      }
      if (this.pending.size > 0) this.log.error({ code, signal, sandboxes: this.pending.size }, 'the sandbox spawner died; its sandboxes died with it');
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        if (!p.spawned) p.started.reject(new SpawnFailed(`the sandbox spawner exited (${code ?? signal})`, false));
        else p.close({ code: null, signal: 'SIGKILL' });
      }
    });
    // Referenced until it is ready (a caller may be waiting for it with nothing else keeping this process alive).
    this.ready.then(() => this.unrefIfIdle(child), () => undefined);
    return this.ready;
  }

  /** The helper never keeps the node alive by itself: it is referenced only while sandboxes are in flight. */
  private unrefIfIdle(child: ChildProcess): void {
    const channel = (child as unknown as { channel?: { ref(): void; unref(): void } }).channel;
    if (this.pending.size === 0) {
      child.unref();
      channel?.unref();
    } else {
      child.ref();
      channel?.ref();
    }
  }

  private onEvent(e: SpawnerEvent): void {
    if (e.id === 0) return;
    const p = this.pending.get(e.id);
    if (!p) return;
    switch (e.ev) {
      case 'spawned':
        p.proc.pid = e.pid;
        p.spawned = true;
        p.started.resolve();
        break;
      case 'failed':
        this.pending.delete(e.id);
        p.started.reject(new SpawnFailed(e.message, e.network));
        break;
      case 'out':
        (e.fd === 1 ? p.proc.stdout : p.proc.stderr).write(Buffer.from(e.data.buffer, e.data.byteOffset, e.data.byteLength));
        break;
      case 'close':
        this.pending.delete(e.id);
        p.proc.exitCode = e.code;
        p.proc.signalCode = e.signal;
        p.proc.stdout.end();
        p.proc.stderr.end();
        // After the streams delivered what they hold (their 'data' goes out on next ticks), as a child's 'close'.
        setImmediate(() => p.close({ code: e.code, signal: e.signal }));
        break;
    }
    if (this.helper) this.unrefIfIdle(this.helper);
  }

  /** Starts `req` in the helper; resolves once it runs (with its network, if any). Rejects with SpawnFailed. */
  async spawn(req: SpawnRequest): Promise<SpawnedSandbox> {
    const helper = await this.connect();
    const id = this.nextId++;
    const proc = new RemoteProcess();
    let close!: Pending['close'];
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => (close = resolve));
    const started = new Promise<void>((resolve, reject) => {
      this.pending.set(id, { proc, started: { resolve, reject }, close, spawned: false });
    });
    this.unrefIfIdle(helper);
    try {
      helper.send({ op: 'spawn', id, ...req } satisfies SpawnMessage);
    } catch (err) {
      this.pending.delete(id);
      throw new SpawnFailed(`the sandbox spawner is gone: ${(err as Error).message}`, false);
    }
    await started;
    return { child: proc, closed };
  }

  close(): void {
    this.helper?.kill('SIGTERM');
    this.helper = undefined;
    this.ready = undefined;
  }
}
