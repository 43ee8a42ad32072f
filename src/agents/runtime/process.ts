// `process` isolation: the sandbox is a child process of the orchestrator.
//
// With bubblewrap (`bwrap`, package bubblewrap; scripts/setup-podman.sh installs it) the child runs in fresh
// namespaces: `--unshare-all` (user, ipc, pid, net, uts, cgroup) with `--share-net` only when spec.network, an empty
// root holding read-only binds of /usr (and /bin, /lib, /lib64, /sbin as binds or as the host's merged-usr symlinks),
// a few /etc files node and TLS need, a private /proc, /dev and /tmp, the spec's mounts at their sandbox paths,
// `--chdir` to the workdir and `--clearenv` plus spec.env (+PATH). `--die-with-parent` kills it when the
// orchestrator dies, and as pid 1 of its pid namespace its death takes every process inside with it.
//
// Without bwrap (or when it cannot create namespaces here) the child is a plain process: WEAKER ISOLATION — it sees
// the whole host filesystem and network and runs as the orchestrator's user; only its environment is clean (spec.env
// + PATH, nothing inherited, so no secret of the orchestrator's environment leaks) and its cwd is set. A warning is
// logged once. Sandbox paths cannot be remapped then, so the runtime rewrites them to host paths: the workdir, argv
// elements and env values that start with a mount's sandboxPath (also in the `unix://<path>` form of
// ORCH_ORCHESTRATOR_URL) are translated with `resolvePath`. Paths embedded inside a larger string (for instance in
// a `sh -c` script) are NOT rewritten: pass them through env. With setpriv (util-linux) the child gets
// PDEATHSIG=SIGKILL so that it dies with the orchestrator; its own children are killed by stop() (process group) but
// would outlive a crashed orchestrator. Memory and CPU limits are not enforced by this runtime.
//
// The dispatch gateway is reached as in docker isolation: spec.runDir (the host directory holding the gateway's
// unix socket) is bound at /orch/run, and the bootstrap speaks HTTP over /orch/run/gateway.sock (without bwrap the
// rewritten host path), so no network is needed.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import type { Logger } from '../../logging/logger.js';
import { ExecOutput } from './exec-output.js';
import {
  SANDBOX_GATEWAY_SOCKET,
  sandboxLabels,
  sandboxMounts,
  type ContainerRuntime,
  type RuntimeOptions,
  type SandboxHandle,
  type SandboxExecRequest,
  type SandboxExecResult,
  type SandboxMount,
  type SandboxSpec,
} from './types.js';

export interface ProcessRuntimeOptions extends RuntimeOptions {
  /** 'auto' (default): bwrap when it is installed and works here; 'bwrap': require it; 'none': never use it. */
  sandbox?: 'auto' | 'bwrap' | 'none';
  /** Path of the bwrap binary (default: looked up on PATH). */
  bwrapPath?: string;
  /** Bytes of stdout / stderr kept per sandbox for `output()` (default 64 KiB each). */
  outputTailBytes?: number;
}

interface Tracked {
  id: string;
  child: ChildProcess;
  labels: Record<string, string>;
  exited: Promise<number>;
  done: boolean;
  stdout: Buffer[];
  stderr: Buffer[];
  /** What exec() needs to start a sibling process with the same view: the spec, its mounts and environment. */
  spec: SandboxSpec;
  mounts: SandboxMount[];
  env: Record<string, string>;
}

const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin';

function which(cmd: string): string | undefined {
  for (const dir of (process.env.PATH ?? DEFAULT_PATH).split(':')) {
    if (!dir) continue;
    const p = path.join(dir, cmd);
    if (existsSync(p)) return p;
  }
  return undefined;
}

function within(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

/** Maps a sandbox path to its host path through the mounts (longest sandboxPath first); undefined if unmounted. */
export function resolvePath(mounts: SandboxMount[], sandboxPath: string): string | undefined {
  const sorted = [...mounts].sort((a, b) => b.sandboxPath.length - a.sandboxPath.length);
  for (const m of sorted) {
    const sp = m.sandboxPath.replace(/\/+$/, '') || '/';
    if (within(sandboxPath, sp)) return path.join(m.hostPath, sandboxPath.slice(sp.length));
  }
  return undefined;
}

/** Rewrites a value that is a sandbox path (or `unix://` + one) to the host path; others are returned unchanged. */
export function rewriteSandboxValue(mounts: SandboxMount[], value: string): string {
  for (const prefix of ['unix://', '']) {
    if (!value.startsWith(prefix)) continue;
    const rest = value.slice(prefix.length);
    if (!rest.startsWith('/')) continue;
    const host = resolvePath(mounts, rest);
    if (host !== undefined) return prefix + host;
  }
  return value;
}

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  if (signal) return 128 + (osConstants.signals[signal] ?? 0);
  return -1;
}

export class ProcessRuntime implements ContainerRuntime {
  readonly kind = 'process' as const;
  private readonly log: Logger;
  private readonly opts: ProcessRuntimeOptions;
  private readonly tracked = new Map<string, Tracked>();
  private bwrap: string | null | undefined; // undefined: not probed yet; null: unavailable
  private warned = false;

  constructor(opts: ProcessRuntimeOptions) {
    this.opts = opts;
    this.log = opts.logger.child({ component: 'runtime', runtime: 'process' });
  }

  orchestratorUrl(_port: number): string {
    return `unix://${SANDBOX_GATEWAY_SOCKET}`;
  }

  /** Whether sandboxes run under bubblewrap (probed once: installed and able to create namespaces here). */
  usesBwrap(): boolean {
    if (this.bwrap !== undefined) return this.bwrap !== null;
    const mode = this.opts.sandbox ?? 'auto';
    if (mode === 'none') {
      this.bwrap = null;
      return false;
    }
    const bin = this.opts.bwrapPath ?? which('bwrap');
    let reason = 'bwrap is not installed';
    if (bin) {
      const probe = spawnSync(bin, [...this.systemArgs(), '--unshare-all', '--die-with-parent', '--', 'true'], {
        stdio: ['ignore', 'ignore', 'pipe'],
        timeout: 10_000,
      });
      if (probe.status === 0) {
        this.bwrap = bin;
        return true;
      }
      reason = `bwrap cannot create a sandbox here: ${probe.error?.message ?? probe.stderr?.toString().trim() ?? `exit ${probe.status}`}`;
    }
    if (mode === 'bwrap') throw new Error(`process isolation requires bubblewrap but ${reason}`);
    this.bwrap = null;
    if (!this.warned) {
      this.warned = true;
      this.log.warn({ reason }, 'process isolation without bubblewrap: sandboxes are plain child processes ' +
        '(host filesystem and network visible; only env and cwd are controlled)');
    }
    return false;
  }

  /** Read-only system directories and files node needs, as binds (or the host's merged-usr symlinks). */
  private systemArgs(): string[] {
    const args: string[] = ['--ro-bind', '/usr', '/usr'];
    for (const dir of ['/bin', '/sbin', '/lib', '/lib64', '/lib32', '/libx32']) {
      let st;
      try {
        st = lstatSync(dir);
      } catch {
        continue;
      }
      if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
      else if (st.isDirectory()) args.push('--ro-bind', dir, dir);
    }
    // node itself when it lives outside /usr (nvm, /opt/node, ...).
    const nodeDir = path.dirname(path.dirname(realpathSync(process.execPath)));
    if (nodeDir !== '/' && !within(nodeDir, '/usr')) {
      args.push('--ro-bind', nodeDir, nodeDir);
    }
    for (const f of [
      '/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/alternatives', '/etc/ssl',
      '/etc/ca-certificates', '/etc/pki', '/etc/resolv.conf', '/etc/hosts', '/etc/nsswitch.conf', '/etc/passwd',
      '/etc/group', '/etc/localtime',
    ]) {
      args.push('--ro-bind-try', f, f);
    }
    args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp');
    return args;
  }

  private bwrapArgs(spec: SandboxSpec, mounts: SandboxMount[], env: Record<string, string>): string[] {
    const args = [...this.systemArgs(), '--unshare-all', '--die-with-parent'];
    if (spec.network) args.push('--share-net');
    const sorted = [...mounts].sort((a, b) => a.sandboxPath.split('/').length - b.sandboxPath.split('/').length);
    for (const m of sorted) args.push(m.readOnly ? '--ro-bind' : '--bind', m.hostPath, m.sandboxPath);
    if (!mounts.some((m) => within(spec.workdir, m.sandboxPath))) args.push('--dir', spec.workdir);
    args.push('--chdir', spec.workdir, '--clearenv');
    for (const [k, v] of Object.entries(env)) args.push('--setenv', k, v);
    args.push('--', ...spec.command);
    return args;
  }

  async start(spec: SandboxSpec): Promise<SandboxHandle> {
    const id = `process-${spec.executionId}`;
    const existing = this.tracked.get(id);
    if (existing && !existing.done) throw new Error(`sandbox ${id} is already running; stop it first`);
    if (spec.command.length === 0) throw new Error('spec.command is empty');

    const mounts = sandboxMounts(spec);
    for (const m of mounts) {
      if (!path.isAbsolute(m.hostPath) || !path.isAbsolute(m.sandboxPath)) {
        throw new Error(`mount paths must be absolute: ${m.hostPath} -> ${m.sandboxPath}`);
      }
    }
    const env: Record<string, string> = {
      PATH: `${DEFAULT_PATH}:${path.dirname(process.execPath)}`,
      ...spec.env,
    };
    const labels = sandboxLabels(spec, this.opts.nodeId);

    let file: string;
    let args: string[];
    let cwd: string;
    let childEnv: Record<string, string>;
    const bwrap = this.usesBwrap() ? this.bwrap! : null;
    if (bwrap) {
      file = bwrap;
      args = this.bwrapArgs(spec, mounts, env);
      cwd = '/';
      // bwrap itself needs nothing from the environment; the sandbox gets exactly `env` through --setenv.
      childEnv = { PATH: env.PATH ?? DEFAULT_PATH };
    } else {
      const workdir = resolvePath(mounts, spec.workdir) ?? spec.workdir;
      if (!existsSync(workdir)) throw new Error(`workdir ${spec.workdir} (host ${workdir}) does not exist`);
      cwd = workdir;
      childEnv = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, rewriteSandboxValue(mounts, v)]));
      const argv = spec.command.map((a, i) => (i === 0 ? a : rewriteSandboxValue(mounts, a)));
      const setpriv = which('setpriv');
      if (setpriv) {
        file = setpriv;
        args = ['--pdeathsig', 'KILL', '--', ...argv];
      } else {
        file = argv[0]!;
        args = argv.slice(1);
      }
    }

    const child = spawn(file, args, {
      cwd,
      env: childEnv,
      detached: true, // own process group: stop() kills the whole group
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const tailBytes = this.opts.outputTailBytes ?? 64 * 1024;
    const entry: Tracked = { id, child, labels, done: false, stdout: [], stderr: [], exited: undefined as never, spec, mounts, env };
    const keep = (buf: Buffer[], chunk: Buffer) => {
      buf.push(chunk);
      let total = buf.reduce((n, b) => n + b.length, 0);
      while (total > tailBytes && buf.length > 1) total -= buf.shift()!.length;
    };
    child.stdout?.on('data', (c: Buffer) => keep(entry.stdout, c));
    child.stderr?.on('data', (c: Buffer) => keep(entry.stderr, c));

    entry.exited = new Promise<number>((resolve) => {
      child.once('close', (code, signal) => {
        entry.done = true;
        const exitCode = exitCodeOf(code, signal);
        this.log.debug({ sandbox_id: id, exit_code: exitCode }, 'sandbox process exited');
        resolve(exitCode);
      });
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', (err) => reject(new Error(`starting ${id} (${file}) failed: ${err.message}`)));
    });
    this.tracked.set(id, entry);
    this.log.info({ execution_id: spec.executionId, sandbox_id: id, pid: child.pid, bwrap: Boolean(bwrap), network: spec.network },
      'sandbox process started');
    return { id, exited: entry.exited };
  }

  /**
   * Runs a command beside the sandbox's main process with the same view: under bwrap a sibling sandbox with the
   * same mounts, network setting and environment (its own pid namespace); without bwrap a plain child with the
   * sandbox paths rewritten, like start(). Killed (its whole process group) after timeout_secs.
   */
  async exec(id: string, req: SandboxExecRequest): Promise<SandboxExecResult> {
    const entry = this.tracked.get(id);
    if (!entry || entry.done) throw new Error(`sandbox ${id} is not running`);
    const { mounts, env } = entry;
    let file: string;
    let args: string[];
    let cwd: string;
    let childEnv: Record<string, string>;
    const bwrap = this.usesBwrap() ? this.bwrap! : null;
    if (bwrap) {
      file = bwrap;
      args = this.bwrapArgs({ ...entry.spec, workdir: req.cwd, command: [req.command, ...req.args] }, mounts, env);
      cwd = '/';
      childEnv = { PATH: env.PATH ?? DEFAULT_PATH };
    } else {
      cwd = resolvePath(mounts, req.cwd) ?? req.cwd;
      childEnv = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, rewriteSandboxValue(mounts, v)]));
      file = req.command;
      args = req.args.map((a) => rewriteSandboxValue(mounts, a));
    }
    const output = new ExecOutput(req.max_output_bytes);
    return new Promise<SandboxExecResult>((resolve) => {
      let child: ChildProcess;
      try {
        child = spawn(file, args, { cwd, env: childEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      } catch (err) {
        output.stderr(Buffer.from(String((err as Error).message)));
        resolve(output.result(-1, false, req.timeout_secs));
        return;
      }
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          child.kill('SIGKILL');
        }
      }, Math.max(1, req.timeout_secs) * 1000);
      timer.unref();
      child.stdout?.on('data', output.stdout);
      child.stderr?.on('data', output.stderr);
      child.once('error', (err) => {
        clearTimeout(timer);
        output.stderr(Buffer.from(err.message));
        resolve(output.result(-1, false, req.timeout_secs));
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        resolve(output.result(exitCodeOf(code, signal), timedOut, req.timeout_secs));
      });
    });
  }

  async stop(id: string): Promise<void> {
    const entry = this.tracked.get(id);
    if (!entry) return;
    if (!entry.done && entry.child.pid !== undefined) {
      try {
        process.kill(-entry.child.pid, 'SIGKILL');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      }
      // 'close' waits for the stdio pipes too; a grandchild that escaped the group could hold them open, so bound it.
      await Promise.race([entry.exited, new Promise((r) => setTimeout(r, 2000).unref())]);
    }
    this.tracked.delete(id);
    this.log.info({ sandbox_id: id }, 'sandbox process stopped');
  }

  async reap(label: string, value: string): Promise<string[]> {
    // Processes of a dead node died with it (--die-with-parent / PDEATHSIG); only tracked ones can remain.
    const ids = [...this.tracked.values()].filter((e) => e.labels[label] === value).map((e) => e.id);
    await Promise.all(ids.map((id) => this.stop(id)));
    return ids;
  }

  /** The tail of the sandbox's stdout and stderr (diagnostics and tests); undefined once stopped. */
  output(id: string): { stdout: string; stderr: string } | undefined {
    const e = this.tracked.get(id);
    if (!e) return undefined;
    return { stdout: Buffer.concat(e.stdout).toString('utf8'), stderr: Buffer.concat(e.stderr).toString('utf8') };
  }

  /** Ids of the sandboxes this runtime tracks (running or exited but not yet stopped). */
  list(): string[] {
    return [...this.tracked.keys()];
  }
}
