// `process` isolation: the sandbox is a child process of the orchestrator, always inside bubblewrap (`bwrap`,
// package bubblewrap; scripts/setup-podman.sh installs it).
//
// The child runs in fresh namespaces: `--unshare-all` (user, ipc, pid, net, uts, cgroup), always its own network
// namespace — with spec.network it gets user-mode networking from slirp4netns with the host's loopback cut off
// (sandbox-net.ts), never the host's namespace —, an empty root holding read-only binds of /usr (and /bin, /lib, /lib64, /sbin as binds or as the
// host's merged-usr symlinks), a few /etc files node and TLS need, a private /proc, /dev and /tmp, the spec's mounts
// at their sandbox paths, `--chdir` to the workdir and `--clearenv` plus spec.env (+PATH). `--die-with-parent` kills
// it when the orchestrator dies, and as pid 1 of its pid namespace its death takes every process inside with it.
// bwrap itself is started with nothing but PATH in its environment, so the sandbox's parent (pid 1 inside, what
// `/proc/$PPID/environ` shows) holds no secret of the orchestrator's. spec.secretEnv (the attestation secret) goes
// through bwrap's own environment, never its argv: a host `ps` shows every process's command line.
//
// spec.user (tenant commands: System states) makes the command run as that unprivileged HOST uid: a root
// orchestrator starts bwrap in the host user namespace (so it can bind any host path) and the command through
// setpriv with that uid/gid, no supplementary groups, no capability, an empty bounding set and no_new_privs. (A
// bwrap user namespace with `--uid` would only rename root: the process would still act as host uid 0 for files
// and sysctls.) An orchestrator that is not root is unprivileged already and runs it under its own uid.
//
// When a sandbox cannot be made (bwrap missing, namespaces refused here) start(), exec() and run() reject with
// SandboxUnavailableError: there is NO silent fallback to a plain process. The only unsandboxed mode is the explicit
// operator setting `runtime.unsandboxed_process: true` (sandbox: 'none', for a single trusted developer; the node
// warns loudly at start): then the child is a plain process that sees the whole host filesystem and network; only
// its environment is clean (spec.env + PATH) and its cwd is set. Sandbox paths cannot be remapped then, so the
// runtime rewrites them to host paths: the workdir, argv elements and env values that start with a mount's
// sandboxPath (also in the `unix://<path>` form of ORCH_ORCHESTRATOR_URL) are translated with `resolvePath`. Paths
// embedded inside a larger string are NOT rewritten. With setpriv (util-linux) the child gets PDEATHSIG=SIGKILL.
// Memory and CPU limits are not enforced by this runtime.
//
// The dispatch gateway is reached as in docker isolation: spec.runDir (the host directory holding the gateway's
// unix socket) is bound at /orch/run, and the bootstrap speaks HTTP over /orch/run/gateway.sock (in 'none' mode the
// rewritten host path), so no network is needed.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import type { Logger } from '../../logging/logger.js';
import { BWRAP_BLOCK_FD, BWRAP_INFO_FD, connectSandbox, type SandboxNet } from './sandbox-net.js';
import { ExecOutput, StreamTail } from './exec-output.js';
import { SandboxSpawner, SpawnFailed, type SandboxProcess } from './spawner.ts';
import {
  SANDBOX_GATEWAY_SOCKET,
  SandboxUnavailableError,
  sandboxLabels,
  sandboxMounts,
  type ContainerRuntime,
  type RuntimeOptions,
  type SandboxHandle,
  type SandboxExecRequest,
  type SandboxExecResult,
  type SandboxMount,
  type SandboxRunOptions,
  type SandboxRunResult,
  type SandboxSpec,
  type SandboxUser,
} from './types.js';

export interface ProcessRuntimeOptions extends RuntimeOptions {
  /** 'bwrap' (default): every sandbox is a bubblewrap sandbox, and none is started when bwrap cannot make one.
   * 'none': plain child processes, NO isolation (the operator setting runtime.unsandboxed_process; a single trusted
   * developer only). */
  sandbox?: 'bwrap' | 'none';
  /** Path of the bwrap binary (default: looked up on PATH). */
  bwrapPath?: string;
  /** Path of the slirp4netns binary that gives sandboxes with spec.network their network (default: looked up on
   * PATH). Missing: such sandboxes fail; they never get the host's network. */
  slirp4netnsPath?: string;
  /** Bytes of stdout / stderr kept per sandbox for `output()` (default 64 KiB each). */
  outputTailBytes?: number;
  /** 'helper' (default): sandboxes are forked by a small helper process (spawner.ts), never by the node, whose
   * fork would block its event loop for tens of ms; 'inline': by this process (tests of the runtime alone). */
  spawn?: 'helper' | 'inline';
}

interface Tracked {
  id: string;
  /** The main process; absent for an idle sandbox (SandboxSpec.idle). */
  child: SandboxProcess | undefined;
  /** Commands running through exec(): stop() kills them with the sandbox. */
  execs: Set<SandboxProcess>;
  /** Ends an idle sandbox's `exited` (stop()). */
  end?: (code: number) => void;
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
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

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

/** SIGKILL to the child's whole process group (it was spawned detached). */
function killGroup(child: SandboxProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  if (signal) return 128 + (osConstants.signals[signal] ?? 0);
  return -1;
}

/** How a sandbox's process is launched: the binary, its argv, cwd and environment, and (unsandboxed mode only) the
 * host user spawn switches to; bwrap drops to spec.user itself, inside the sandbox. */
interface Launch {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  user?: SandboxUser;
  bwrap: boolean;
  /** The slirp4netns binary to attach once bwrap made the network namespace (spec.network under bwrap). */
  slirp?: string;
  /** slirp4netns must join the sandbox's user namespace (an orchestrator that is not root). */
  userns?: boolean;
}

/** A spawned sandbox process whose network (if any) is up and whose command was released. */
interface Opened {
  child: SandboxProcess;
  /** Resolves once the process has exited and its stdio closed. */
  closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export class ProcessRuntime implements ContainerRuntime {
  readonly kind = 'process' as const;
  readonly idleSandboxes = true;
  private readonly log: Logger;
  private readonly opts: ProcessRuntimeOptions;
  private readonly tracked = new Map<string, Tracked>();
  /** Probe results per host user (`self` or `uid:gid`): the bwrap path, or why no sandbox can be made. */
  private readonly probes = new Map<string, { bin: string } | { reason: string }>();
  private spawner: SandboxSpawner | undefined;
  private system: string[] | undefined;

  constructor(opts: ProcessRuntimeOptions) {
    this.opts = opts;
    this.log = opts.logger.child({ component: 'runtime', runtime: 'process' });
    if (opts.spawn !== 'inline') this.spawner = new SandboxSpawner(this.log);
  }

  /** Forks the spawner helper now, while the node is small (the node calls it at start). */
  warm(): void {
    this.spawner?.warm();
  }

  /** Ends the spawner helper (its sandboxes die with it). */
  close(): void {
    this.spawner?.close();
  }

  orchestratorUrl(_port: number): string {
    return `unix://${SANDBOX_GATEWAY_SOCKET}`;
  }

  /** True in the operator's explicit unsandboxed mode (runtime.unsandboxed_process). */
  get unsandboxed(): boolean {
    return this.opts.sandbox === 'none';
  }

  /** Whether sandboxes run under bubblewrap: false only in the unsandboxed mode or when bwrap cannot work here (then
   * every start fails). Never throws. */
  usesBwrap(): boolean {
    if (this.unsandboxed) return false;
    return 'bin' in this.probe(undefined);
  }

  /** The host user a sandbox runs as: spec.user, unless the orchestrator is not root (it is unprivileged already and
   * could not switch). */
  private hostUser(user: SandboxUser | undefined): SandboxUser | undefined {
    if (!user) return undefined;
    return process.getuid?.() === 0 ? user : undefined;
  }

  /** Probes once per host user whether bwrap is installed and can create its namespaces (and, for a user to drop
   * to, whether setpriv is there to do it). */
  private probe(user: SandboxUser | undefined): { bin: string; setpriv?: string; env?: string } | { reason: string } {
    const key = user ? `${user.uid}:${user.gid}` : 'self';
    const cached = this.probes.get(key);
    if (cached) return cached;
    const bin = this.opts.bwrapPath ?? which('bwrap');
    const setpriv = user ? which('setpriv') : undefined;
    const envBin = user ? which('env') : undefined;
    let found: { bin: string; setpriv?: string; env?: string } | { reason: string };
    if (!bin) {
      found = { reason: 'bubblewrap (bwrap) is not installed' };
    } else if (!existsSync(bin)) {
      found = { reason: `the bubblewrap binary ${bin} does not exist` };
    } else if (user && (!setpriv || !envBin)) {
      found = { reason: `setpriv (util-linux) and env (coreutils) are needed to drop to uid ${user.uid}, and ${setpriv ? 'env' : 'setpriv'} is not installed` };
    } else {
      const args = this.bwrapArgs({ command: ['true'], workdir: '/', network: false }, [], {}, {}, user && setpriv && envBin ? { user, setpriv, env: envBin } : undefined);
      const probe = spawnSync(bin, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: DEFAULT_PATH }, timeout: 10_000 });
      found = probe.status === 0
        ? { bin, ...(setpriv && envBin ? { setpriv, env: envBin } : {}) }
        : { reason: `bubblewrap (${bin}) cannot create a sandbox here: ${probe.error?.message ?? (probe.stderr?.toString().trim() || `exit ${String(probe.status ?? probe.signal)}`)}` };
    }
    if ('reason' in found) this.log.error({ reason: found.reason }, 'process isolation cannot make a sandbox; commands that need one fail');
    this.probes.set(key, found);
    return found;
  }

  /** Read-only system directories and files node needs, as binds (or the host's merged-usr symlinks); worked out
   * once (about twenty file-system calls that used to run for every sandbox). */
  private systemArgs(): string[] {
    this.system ??= this.readSystemArgs();
    return this.system;
  }

  private readSystemArgs(): string[] {
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
    const dirs = new Set<string>();
    const binds: string[] = [];
    for (const f of [
      '/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/alternatives', '/etc/ssl/certs', '/etc/ssl/openssl.cnf',
      '/etc/ca-certificates', '/etc/pki/tls/certs', '/etc/resolv.conf', '/etc/hosts', '/etc/nsswitch.conf', '/etc/passwd',
      '/etc/group', '/etc/localtime',
    ]) {
      if (!existsSync(f)) continue;
      // Their parents readable by everyone: bwrap makes missing parents 0700 when it runs as real root (a System
      // state's unprivileged user could then read no /etc file: no TLS certificates, no resolver, no node).
      for (let d = path.dirname(f); d !== '/' && !dirs.has(d); d = path.dirname(d)) dirs.add(d);
      binds.push('--ro-bind-try', f, f);
    }
    for (const d of [...dirs].sort((a, b) => a.length - b.length)) args.push('--perms', '0755', '--dir', d);
    args.push(...binds);
    // The kernel's global knobs read-only (as Docker does): a process that is uid 0 on the host — an agent sandbox
    // of a root orchestrator is root mapped into a user namespace — passes the owner check of /proc/sys files
    // without any capability, and /proc/sys/kernel/core_pattern would run a program as host root.
    args.push('--proc', '/proc', '--ro-bind', '/proc/sys', '/proc/sys');
    for (const p of ['/proc/sysrq-trigger', '/proc/irq', '/proc/bus', '/proc/fs']) args.push('--ro-bind-try', p, p);
    args.push('--dev', '/dev', '--tmpfs', '/tmp');
    return args;
  }

  /**
   * The bwrap argv. Without `drop`: every namespace unshared, the user namespace included (agents). With `drop`
   * (a root orchestrator running a tenant command): bwrap keeps the host's user namespace so that it can bind any
   * host path as root, and the command starts through setpriv as the unprivileged host user with no capability,
   * an empty bounding set and no_new_privs: a real non-root uid, not a root mapped into a user namespace.
   */
  private bwrapArgs(
    spec: Pick<SandboxSpec, 'command' | 'workdir' | 'network'>,
    mounts: SandboxMount[],
    env: Record<string, string>,
    secretEnv: Record<string, string>,
    drop?: { user: SandboxUser; setpriv: string; env: string },
  ): string[] {
    const args = [...this.systemArgs()];
    // Always a network namespace of its own: with spec.network, slirp4netns joins it (launch / open) while
    // --block-fd holds the command; the host's namespace would expose its loopback services.
    if (drop) {
      args.push('--unshare-ipc', '--unshare-pid', '--unshare-uts', '--unshare-cgroup-try', '--new-session', '--unshare-net');
    } else {
      // No capability even inside the user namespace: nothing may remount the read-only binds above.
      args.push('--unshare-all', '--cap-drop', 'ALL');
    }
    if (spec.network) args.push('--info-fd', String(BWRAP_INFO_FD), '--block-fd', String(BWRAP_BLOCK_FD));
    args.push('--die-with-parent');
    const sorted = [...mounts].sort((a, b) => a.sandboxPath.split('/').length - b.sandboxPath.split('/').length);
    for (const m of sorted) args.push(m.readOnly ? '--ro-bind' : '--bind', m.hostPath, m.sandboxPath);
    if (!mounts.some((m) => within(spec.workdir, m.sandboxPath))) args.push('--dir', spec.workdir);
    args.push('--chdir', spec.workdir);
    if (!drop) {
      // No --clearenv: bwrap's own environment is exactly PATH plus secretEnv (spawnOpts), which the command keeps;
      // the rest arrives by --setenv.
      for (const [k, v] of Object.entries(env)) if (!(k in secretEnv)) args.push('--setenv', k, v);
      args.push('--', ...spec.command);
      return args;
    }
    // setpriv still runs as root with every capability: it must start with an EMPTY environment (LD_PRELOAD of a
    // library the tenant wrote into /workspace would otherwise run as host root). The declared environment is set
    // by `env -i` after the drop, for the unprivileged command alone.
    const { uid, gid } = drop.user;
    args.push('--clearenv');
    if (Object.keys(secretEnv).length > 0) throw new Error('secretEnv cannot reach a command that drops to spec.user (it would be on its argv)');
    for (const k of Object.keys(env)) {
      if (!ENV_NAME.test(k)) throw new Error(`${JSON.stringify(k)} is not a valid environment variable name`);
    }
    if (spec.command[0]?.includes('=')) throw new Error(`the command ${spec.command[0]} contains "="`);
    args.push('--', drop.setpriv, `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', '--',
      drop.env, '-i', '--', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...spec.command);
    return args;
  }

  /** The process to spawn for `spec`: bwrap (or, only in the operator's unsandboxed mode, the plain command). Throws
   * SandboxUnavailableError when bwrap cannot make the sandbox: never a plain process instead. */
  private launch(spec: SandboxSpec, mounts: SandboxMount[], env: Record<string, string>): Launch {
    const user = this.hostUser(spec.user);
    const secretEnv = spec.secretEnv ?? {};
    for (const k of Object.keys(secretEnv)) {
      if (!ENV_NAME.test(k) || k.startsWith('LD_') || k === 'PATH') throw new Error(`${JSON.stringify(k)} cannot be a secretEnv name`);
    }
    if (!this.unsandboxed) {
      const probe = this.probe(user);
      if ('reason' in probe) throw new SandboxUnavailableError(`no sandbox for ${spec.agentId}: ${probe.reason}; the command was not run (orch never runs it outside a sandbox)`);
      let slirp: string | undefined;
      if (spec.network) {
        slirp = this.opts.slirp4netnsPath ?? which('slirp4netns');
        if (!slirp || !existsSync(slirp)) {
          throw new SandboxUnavailableError(`no sandbox with network for ${spec.agentId}: slirp4netns ${slirp ? `(${slirp}) does not exist` : 'is not installed'}, ` +
            'and a sandbox never gets the host\'s network instead; the command was not run');
        }
      }
      const drop = user && probe.setpriv && probe.env ? { user, setpriv: probe.setpriv, env: probe.env } : undefined;
      // bwrap itself needs nothing from the environment and gets nothing of the spec's but secretEnv (kept off every
      // argv): the sandbox gets exactly `env` + secretEnv, through --setenv, or `env` through `env -i` after the drop.
      return {
        file: probe.bin, args: this.bwrapArgs(spec, mounts, env, secretEnv, drop), cwd: '/', env: { PATH: DEFAULT_PATH, ...secretEnv }, bwrap: true,
        ...(slirp ? { slirp, userns: !drop && process.getuid?.() !== 0 } : {}),
      };
    }
    const workdir = resolvePath(mounts, spec.workdir) ?? spec.workdir;
    if (!existsSync(workdir)) throw new Error(`workdir ${spec.workdir} (host ${workdir}) does not exist`);
    const childEnv = Object.fromEntries(Object.entries({ ...env, ...secretEnv }).map(([k, v]) => [k, rewriteSandboxValue(mounts, v)]));
    const argv = spec.command.map((a, i) => (i === 0 ? a : rewriteSandboxValue(mounts, a)));
    const setpriv = which('setpriv');
    const [file, args] = setpriv ? [setpriv, ['--pdeathsig', 'KILL', '--', ...argv]] : [argv[0]!, argv.slice(1)];
    // The unsandboxed mode still drops to the unprivileged user when it can (spawn's uid/gid).
    return { file, args, cwd: workdir, env: childEnv, ...(user ? { user } : {}), bwrap: false };
  }

  /**
   * Spawns the launch and, for a sandbox with network, attaches slirp4netns to its namespace and then releases the
   * command (bwrap --block-fd). Resolves once the command may run; rejects — the sandbox killed — when the process
   * cannot start or its network cannot be made (SandboxUnavailableError).
   */
  private async open(l: Launch): Promise<Opened> {
    if (this.spawner) {
      try {
        return await this.spawner.spawn({
          file: l.file, args: l.args, cwd: l.cwd, env: l.env,
          ...(l.user ? { uid: l.user.uid, gid: l.user.gid } : {}),
          ...(l.slirp ? { slirp: { bin: l.slirp, userns: l.userns === true } } : {}),
        });
      } catch (err) {
        if (err instanceof SpawnFailed && err.network) {
          throw new SandboxUnavailableError(`the sandbox's network could not be made: ${err.message}; the command was not run (a sandbox never gets the host's network)`);
        }
        throw err;
      }
    }
    const child = spawn(l.file, l.args, {
      cwd: l.cwd,
      env: l.env,
      detached: true, // own process group: stop() and timeouts kill the whole group
      stdio: l.slirp ? ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'],
      ...(l.user ? { uid: l.user.uid, gid: l.user.gid } : {}),
    });
    let net: SandboxNet | undefined;
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once('close', (code, signal) => {
        net?.stop();
        resolve({ code, signal });
      });
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', (err) => reject(new Error(`starting ${l.file} failed: ${err.message}`)));
    });
    if (!l.slirp) return { child, closed };
    try {
      net = await connectSandbox(child, { bin: l.slirp, userns: l.userns === true });
    } catch (err) {
      killGroup(child);
      await Promise.race([closed, new Promise((r) => setTimeout(r, 2000).unref())]);
      throw new SandboxUnavailableError(`the sandbox's network could not be made: ${(err as Error).message}; the command was not run (a sandbox never gets the host's network)`);
    }
    if (child.exitCode !== null || child.signalCode !== null) net.stop();
    return { child, closed };
  }

  private checkMounts(mounts: SandboxMount[]): void {
    for (const m of mounts) {
      if (!path.isAbsolute(m.hostPath) || !path.isAbsolute(m.sandboxPath)) {
        throw new Error(`mount paths must be absolute: ${m.hostPath} -> ${m.sandboxPath}`);
      }
    }
  }

  private envOf(spec: SandboxSpec): Record<string, string> {
    return { PATH: `${DEFAULT_PATH}:${path.dirname(process.execPath)}`, ...spec.env };
  }

  async start(spec: SandboxSpec): Promise<SandboxHandle> {
    const id = `process-${spec.executionId}`;
    const existing = this.tracked.get(id);
    if (existing && !existing.done) throw new Error(`sandbox ${id} is already running; stop it first`);
    if (spec.command.length === 0 && !spec.idle) throw new Error('spec.command is empty');

    const mounts = sandboxMounts(spec);
    this.checkMounts(mounts);
    const env = this.envOf(spec);
    const labels = sandboxLabels(spec, this.opts.nodeId);
    if (spec.idle) return this.startIdle(id, spec, mounts, env, labels);
    const l = this.launch(spec, mounts, env);
    const { child, closed } = await this.open(l).catch((err: unknown) => {
      throw err instanceof SandboxUnavailableError ? err : new Error(`starting ${id}: ${(err as Error).message}`);
    });
    const tailBytes = this.opts.outputTailBytes ?? 64 * 1024;
    const entry: Tracked = { id, child, execs: new Set(), labels, done: false, stdout: [], stderr: [], exited: undefined as never, spec, mounts, env };
    const keep = (buf: Buffer[], chunk: Buffer) => {
      buf.push(chunk);
      let total = buf.reduce((n, b) => n + b.length, 0);
      while (total > tailBytes && buf.length > 1) total -= buf.shift()!.length;
    };
    child.stdout?.on('data', (c: Buffer) => keep(entry.stdout, c));
    child.stderr?.on('data', (c: Buffer) => keep(entry.stderr, c));

    entry.exited = closed.then(({ code, signal }) => {
      entry.done = true;
      const exitCode = exitCodeOf(code, signal);
      this.log.debug({ sandbox_id: id, exit_code: exitCode }, 'sandbox process exited');
      return exitCode;
    });
    this.tracked.set(id, entry);
    this.log.info({ execution_id: spec.executionId, sandbox_id: id, pid: child.pid, bwrap: l.bwrap, network: spec.network },
      'sandbox process started');
    return { id, exited: entry.exited };
  }

  /**
   * An idle sandbox: nothing is spawned now, but everything a command of it needs is checked as for a start (bwrap
   * can make sandboxes here, slirp4netns is there for one with network, the mounts and environment are valid), so a
   * sandbox that cannot be made fails here, as a resident one would. Its commands run through exec().
   */
  private startIdle(id: string, spec: SandboxSpec, mounts: SandboxMount[], env: Record<string, string>, labels: Record<string, string>): SandboxHandle {
    this.launch({ ...spec, command: ['true'] }, mounts, env);
    const entry: Tracked = { id, child: undefined, execs: new Set(), labels, done: false, stdout: [], stderr: [], exited: undefined as never, spec: { ...spec, command: [] }, mounts, env };
    entry.exited = new Promise<number>((resolve) => (entry.end = resolve)).then((code) => {
      entry.done = true;
      return code;
    });
    this.tracked.set(id, entry);
    this.log.debug({ execution_id: spec.executionId, sandbox_id: id, network: spec.network }, 'idle sandbox ready');
    return { id, exited: entry.exited };
  }

  /**
   * Runs a command beside the sandbox's main process with the same view: under bwrap a sibling sandbox with the
   * same mounts, network setting, user and environment (its own pid namespace); in the unsandboxed mode a plain
   * child with the sandbox paths rewritten, like start(). Killed (its whole process group) after timeout_secs.
   */
  async exec(id: string, req: SandboxExecRequest): Promise<SandboxExecResult> {
    const entry = this.tracked.get(id);
    if (!entry || entry.done) throw new Error(`sandbox ${id} is not running`);
    const { mounts, env } = entry;
    const l = this.launch({ ...entry.spec, workdir: req.cwd, command: [req.command, ...req.args] }, mounts, { ...env, ...req.env });
    const output = new ExecOutput(req.max_output_bytes);
    let opened: Opened;
    try {
      opened = await this.open(l);
    } catch (err) {
      if (err instanceof SandboxUnavailableError) throw err;
      output.stderr(Buffer.from(String((err as Error).message)));
      return output.result(-1, false, req.timeout_secs);
    }
    const { child, closed } = opened;
    entry.execs.add(child);
    // Stopped while it was being made: it goes with the sandbox.
    if (entry.done) killGroup(child);
    return new Promise<SandboxExecResult>((resolve) => {
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup(child);
      }, Math.max(1, req.timeout_secs) * 1000);
      timer.unref();
      const onAbort = (): void => killGroup(child);
      req.signal?.addEventListener('abort', onAbort, { once: true });
      if (req.signal?.aborted) onAbort();
      child.stdout?.on('data', output.stdout);
      child.stderr?.on('data', output.stderr);
      // never-rejects: `closed` only ever resolves (on the child's 'close').
      void closed.then(({ code, signal }) => {
        clearTimeout(timer);
        req.signal?.removeEventListener('abort', onAbort);
        entry.execs.delete(child);
        resolve(output.result(exitCodeOf(code, signal), timedOut, req.timeout_secs));
      });
    });
  }

  /** One command in a fresh sandbox, to its end (System states). Rejects with SandboxUnavailableError when bwrap
   * cannot make the sandbox. */
  async run(spec: SandboxSpec, opts: SandboxRunOptions): Promise<SandboxRunResult> {
    if (spec.command.length === 0) throw new Error('spec.command is empty');
    const mounts = sandboxMounts(spec);
    this.checkMounts(mounts);
    const l = this.launch(spec, mounts, this.envOf(spec));
    const started = Date.now();
    const out = new StreamTail(opts.maxOutputBytes);
    const err = new StreamTail(opts.maxOutputBytes);
    const { child, closed } = await this.open(l).catch((e: unknown) => {
      throw e instanceof SandboxUnavailableError ? e : new Error(`starting the sandbox for ${spec.agentId}: ${(e as Error).message}`);
    });
    return new Promise<SandboxRunResult>((resolve) => {
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup(child);
      }, Math.max(1, opts.timeoutMs));
      const onAbort = (): void => killGroup(child);
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      if (opts.signal?.aborted) onAbort();
      const done = (): void => {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
      };
      child.stdout?.on('data', out.push);
      child.stderr?.on('data', err.push);
      // never-rejects: `closed` only ever resolves (on the child's 'close').
      void closed.then(({ code, signal }) => {
        done();
        resolve({
          exit_code: timedOut ? 124 : exitCodeOf(code, signal),
          stdout: out.text(),
          stderr: err.text() + (timedOut ? `\ncommand killed after ${Math.round(opts.timeoutMs / 1000)} s` : ''),
          duration_ms: Date.now() - started,
          timed_out: timedOut,
        });
      });
    });
  }

  async stop(id: string): Promise<void> {
    const entry = this.tracked.get(id);
    if (!entry) return;
    for (const c of entry.execs) killGroup(c);
    if (!entry.child) {
      entry.end?.(137);
      await entry.exited;
    } else if (!entry.done && entry.child.pid !== undefined) {
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
