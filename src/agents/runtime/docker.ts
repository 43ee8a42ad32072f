// `docker` isolation: one container per sandbox through the Docker Engine API (dockerode), against DOCKER_HOST.
// Here the engine is podman's Docker-compatible service (scripts/setup-podman.sh starts it and builds the local
// image localhost/orch-runtime:latest: busybox + the host's node); a real Docker engine works the same way.
//
// Reaching the orchestrator without a network. Containers run with NetworkMode "none" unless spec.network, so a
// container cannot open TCP to the host (it has only `lo`). The dispatch gateway therefore ALSO listens on a unix
// socket in a per-execution run directory on the host, `/tmp/orch-run-<id>/<execution_id>/gateway.sock`; that directory
// is bind-mounted read-write at /orch/run (spec.runDir, or a mount the caller adds) and the bootstrap speaks plain
// HTTP over /orch/run/gateway.sock (orchestratorUrl() returns `unix:///orch/run/gateway.sock`). A unix socket is a
// filesystem object, so it crosses the mount namespace without any network namespace. The directory (not the
// socket file) is mounted so that a gateway restart that re-creates the socket is seen by a running container.
// Permissions: containers run as root in rootful podman and the socket is created by the orchestrator (root in CI),
// so no chmod is needed; a non-root container user needs the socket to be writable (chmod 0666 on the socket or a
// matching uid). There is no SELinux here; on an SELinux host add the `:z` relabel option to the run-dir bind.
// Unix socket paths are limited to 107 bytes on Linux: the run directory is short whatever the data dir (run-dir.ts).
import type Docker from 'dockerode';
import { lazyRequire } from '../../util/lazy-require.ts';
import { PassThrough, Writable } from 'node:stream';
import type { Logger } from '../../logging/logger.js';
import { readExitedContainerLogs } from './container-logs.js';
import { ExecOutput, StreamTail } from './exec-output.js';
import {
  SANDBOX_GATEWAY_SOCKET,
  sandboxLabels,
  sandboxMounts,
  type ContainerRuntime,
  type RuntimeOptions,
  type SandboxExecRequest,
  type SandboxExecResult,
  type SandboxHandle,
  type SandboxMount,
  type SandboxRunOptions,
  type SandboxRunResult,
  type SandboxSpec,
  SandboxUnavailableError,
} from './types.js';

export const DEFAULT_RUNTIME_IMAGE = 'localhost/orch-runtime:latest';
export const DEFAULT_DOCKER_HOST = 'unix:///run/orch-podman/podman.sock';

export { LABEL_AGENT_ID, LABEL_EXECUTION_ID, LABEL_NODE_ID } from './types.js';
/** Marks the containers this runtime made (beside the labels of sandboxLabels). */
export const LABEL_MANAGED = 'orch.managed';

export interface DockerRuntimeOptions extends RuntimeOptions {
  /** `unix:///path/to.sock`, `tcp://host:port` or `http(s)://host:port` (DOCKER_HOST syntax). */
  dockerHost: string;
  /** Image when spec.image is absent (default localhost/orch-runtime:latest). */
  defaultImage?: string;
  /** Per-container ulimits; the engine's defaults (containers.conf) apply when absent. */
  ulimits?: Array<{ Name: string; Soft: number; Hard: number }>;
  /** Upper bound for an image pull (default 120 s). */
  pullTimeoutMs?: number;
}

/** Dockerode connection options from a DOCKER_HOST value. */
export function dockerConnection(dockerHost: string): Docker.DockerOptions {
  const url = new URL(dockerHost);
  switch (url.protocol) {
    case 'unix:':
      return { socketPath: decodeURIComponent(url.pathname) };
    case 'npipe:':
      return { socketPath: dockerHost.slice('npipe://'.length) };
    case 'tcp:':
    case 'http:':
      return { protocol: 'http', host: url.hostname, port: Number(url.port || 2375) };
    case 'https:':
      return { protocol: 'https', host: url.hostname, port: Number(url.port || 2376) };
    default:
      throw new Error(`unsupported DOCKER_HOST ${dockerHost}: expected unix://, tcp://, http:// or https://`);
  }
}

function statusCode(err: unknown): number | undefined {
  const c = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof c === 'number' ? c : undefined;
}

function errMessage(err: unknown): string {
  if (err instanceof Error) {
    const json = (err as { json?: { message?: string } }).json;
    return json?.message ?? err.message;
  }
  return String(err);
}

/** Splits the Docker multiplexed log stream (8-byte frame headers) into stdout and stderr. */
export function demuxDockerStream(buf: Buffer): { stdout: string; stderr: string } {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let i = 0;
  while (i + 8 <= buf.length) {
    const kind = buf[i];
    const len = buf.readUInt32BE(i + 4);
    const chunk = buf.subarray(i + 8, i + 8 + len);
    if (kind === 2) err.push(chunk);
    else out.push(chunk);
    i += 8 + len;
  }
  if (i === 0 && buf.length > 0 && buf[0] !== 1 && buf[0] !== 2) return { stdout: buf.toString('utf8'), stderr: '' };
  return { stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}

function bindOf(m: SandboxMount): string {
  return `${m.hostPath}:${m.sandboxPath}:${m.readOnly ? 'ro' : 'rw'}`;
}

/** Required when a Docker runtime is made: the client (with ssh2 and its protocol stack) is not loaded by a node without one. */
const loadDockerode = lazyRequire<typeof Docker>('dockerode');

export class DockerRuntime implements ContainerRuntime {
  readonly kind = 'docker' as const;
  readonly docker: Docker;
  private readonly log: Logger;
  private readonly opts: DockerRuntimeOptions;
  /** Containers this runtime stopped, so that their `exited` resolves with 137 even if wait() lost the race. */
  private readonly stopped = new Set<string>();

  constructor(opts: DockerRuntimeOptions) {
    this.opts = opts;
    const Dockerode = loadDockerode();
    this.docker = new Dockerode(dockerConnection(opts.dockerHost));
    this.log = opts.logger.child({ component: 'runtime', runtime: 'docker' });
  }

  /** True when the engine answers /_ping. */
  async ping(): Promise<boolean> {
    try {
      await this.docker.ping();
      return true;
    } catch {
      return false;
    }
  }

  orchestratorUrl(_port: number): string {
    return `unix://${SANDBOX_GATEWAY_SOCKET}`;
  }

  async start(spec: SandboxSpec): Promise<SandboxHandle> {
    const image = spec.image ?? this.opts.defaultImage ?? DEFAULT_RUNTIME_IMAGE;
    await this.ensureImage(image, spec.imagePullPolicy ?? 'IfNotPresent');

    const labels: Record<string, string> = { ...sandboxLabels(spec, this.opts.nodeId), [LABEL_MANAGED]: 'true' };
    const mounts = sandboxMounts(spec);
    const hostConfig: Docker.HostConfig = {
      Binds: mounts.map(bindOf),
      NetworkMode: spec.network ? 'bridge' : 'none',
      AutoRemove: false,
    };
    if (spec.cpu !== undefined && spec.cpu > 0) hostConfig.NanoCpus = Math.round(spec.cpu * 1e6);
    if (spec.memoryBytes !== undefined && spec.memoryBytes > 0) hostConfig.Memory = spec.memoryBytes;
    if (this.opts.ulimits) hostConfig.Ulimits = this.opts.ulimits;

    const safeId = spec.executionId.toLowerCase().replace(/[^a-z0-9_.-]/g, '-').slice(0, 64);
    const name = `orch-${safeId}-${Math.random().toString(36).slice(2, 8)}`;
    let container: Docker.Container;
    try {
      container = await this.docker.createContainer({
        name,
        Image: image,
        Cmd: spec.command,
        ...(spec.entrypoint ? { Entrypoint: spec.entrypoint } : {}),
        Env: Object.entries({ ...spec.env, ...spec.secretEnv }).map(([k, v]) => `${k}=${v}`),
        Labels: labels,
        WorkingDir: spec.workdir,
        ...(spec.user ? { User: `${spec.user.uid}:${spec.user.gid}` } : {}),
        StopTimeout: 0,
        AttachStdin: false,
        AttachStdout: false,
        AttachStderr: false,
        Tty: false,
        HostConfig: hostConfig,
      });
    } catch (err) {
      throw new Error(`creating the container for execution ${spec.executionId} (image ${image}) failed: ${errMessage(err)}`);
    }
    const id = container.id;
    try {
      await container.start();
    } catch (err) {
      await container.remove({ force: true }).catch(() => undefined);
      throw new Error(`starting container ${id} for execution ${spec.executionId} failed: ${errMessage(err)}`);
    }
    this.log.info({ execution_id: spec.executionId, container_id: id, image, network: spec.network }, 'container started');

    const exited = this.waitExit(container);
    // Never an unhandled rejection: callers that do not await `exited` still get it logged.
    exited.catch((err: unknown) => this.log.warn({ container_id: id, err: errMessage(err) }, 'waiting for container failed'));
    return { id, exited };
  }

  private async waitExit(container: Docker.Container): Promise<number> {
    try {
      const res = (await container.wait()) as { StatusCode?: number };
      const code = typeof res?.StatusCode === 'number' ? res.StatusCode : -1;
      this.log.debug({ container_id: container.id, exit_code: code }, 'container exited');
      return code;
    } catch (err) {
      // stop() removed it while we were waiting: it was SIGKILLed.
      if (this.stopped.has(container.id) || statusCode(err) === 404) return 137;
      throw err;
    }
  }

  private async ensureImage(image: string, policy: 'Always' | 'IfNotPresent' | 'Never'): Promise<void> {
    const present = await this.imagePresent(image);
    if (policy === 'Never') {
      if (!present) {
        throw new Error(`image ${image} is not present on the container engine and imagePullPolicy is Never ` +
          `(build it locally; scripts/setup-podman.sh builds ${DEFAULT_RUNTIME_IMAGE})`);
      }
      return;
    }
    if (policy === 'IfNotPresent' && present) return;
    try {
      await this.pull(image);
    } catch (err) {
      if (policy === 'Always' && present) {
        this.log.warn({ image, err: errMessage(err) }, 'pulling the image failed (imagePullPolicy Always); using the local copy');
        return;
      }
      throw new Error(`image ${image} is not present locally and pulling it failed (imagePullPolicy ${policy}): ` +
        `${errMessage(err)}`);
    }
  }

  private async imagePresent(image: string): Promise<boolean> {
    try {
      await this.docker.getImage(image).inspect();
      return true;
    } catch (err) {
      if (statusCode(err) === 404) return false;
      throw new Error(`inspecting image ${image} failed: ${errMessage(err)}`);
    }
  }

  private async pull(image: string): Promise<void> {
    const timeoutMs = this.opts.pullTimeoutMs ?? 120_000;
    this.log.info({ image }, 'pulling image');
    const stream = await this.docker.pull(image);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        (stream as unknown as { destroy?: () => void }).destroy?.();
        reject(new Error(`pull did not finish within ${timeoutMs} ms`));
      }, timeoutMs);
      this.docker.modem.followProgress(
        stream,
        (err: Error | null, output: Array<{ error?: string; errorDetail?: { message?: string } }>) => {
          clearTimeout(timer);
          if (err) return reject(err);
          const failed = output?.find((o) => o.error || o.errorDetail);
          if (failed) return reject(new Error(failed.errorDetail?.message ?? failed.error ?? 'pull failed'));
          resolve();
        },
      );
    });
    if (!(await this.imagePresent(image))) throw new Error(`pull reported success but ${image} is not present`);
  }

  async stop(id: string): Promise<void> {
    this.stopped.add(id);
    const c = this.docker.getContainer(id);
    try {
      await c.kill({ signal: 'SIGKILL' });
    } catch (err) {
      // 404: already gone; 409 / 500 "not running": already exited. Either way go on and remove.
      if (statusCode(err) === undefined) throw err;
    }
    // 404: gone. 409: podman answers it while the killed container is still being torn down ("removal already in
    // progress", or still stopping) — and then sometimes leaves it behind, so try again until it is really gone.
    for (let attempt = 0; ; attempt++) {
      try {
        await c.remove({ force: true, v: true });
        break;
      } catch (err) {
        const code = statusCode(err);
        if (code === 404) break;
        if (code !== 409 || attempt >= 20) throw new Error(`removing container ${id} failed: ${errMessage(err)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    this.log.info({ container_id: id }, 'container stopped and removed');
  }

  async reap(label: string, value: string): Promise<string[]> {
    const list = await this.docker.listContainers({ all: true, filters: { label: [`${label}=${value}`] } });
    const removed: string[] = [];
    await Promise.all(
      list.map(async (info) => {
        // The engine filters already; check again so that a lax filter can never remove a foreign container.
        if (info.Labels?.[label] !== value) return;
        await this.stop(info.Id);
        removed.push(info.Id);
      }),
    );
    if (removed.length > 0) this.log.info({ label, value, removed }, 'reaped containers');
    return removed;
  }

  /**
   * `docker exec` of a command in the running container (no shell, no tty). On timeout the exec's process is
   * SIGKILLed through its host pid (the engine reports it; the orchestrator shares the host pid namespace with a
   * rootful engine) and the stream is closed.
   */
  async exec(id: string, req: SandboxExecRequest): Promise<SandboxExecResult> {
    const container = this.docker.getContainer(id);
    const output = new ExecOutput(req.max_output_bytes);
    let exec: Docker.Exec;
    try {
      exec = await container.exec({ Cmd: [req.command, ...req.args], WorkingDir: req.cwd, ...(req.env ? { Env: Object.entries(req.env).map(([k, v]) => `${k}=${v}`) } : {}), AttachStdout: true, AttachStderr: true, AttachStdin: false, Tty: false });
    } catch (err) {
      throw new Error(`sandbox ${id} is not running: ${errMessage(err)}`);
    }
    const stream = await exec.start({ hijack: true, stdin: false });
    const out = new PassThrough();
    const err = new PassThrough();
    out.on('data', output.stdout);
    err.on('data', output.stderr);
    this.docker.modem.demuxStream(stream, out, err);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      void exec
        .inspect()
        .then((info) => {
          if (typeof info.Pid === 'number' && info.Pid > 0) process.kill(info.Pid, 'SIGKILL');
        })
        .catch((e: unknown) => this.log.warn({ container_id: id, err: errMessage(e) }, 'killing a timed-out exec failed'))
        .finally(() => stream.destroy());
    }, Math.max(1, req.timeout_secs) * 1000);
    timer.unref();
    await new Promise<void>((resolve) => {
      stream.once('end', resolve);
      stream.once('close', resolve);
      stream.once('error', resolve);
    });
    clearTimeout(timer);
    const info = await exec.inspect().catch(() => undefined);
    const code = typeof info?.ExitCode === 'number' ? info.ExitCode : timedOut ? 137 : -1;
    return output.result(code, timedOut, req.timeout_secs);
  }

  /**
   * One command in a fresh container, to its end (System states under docker isolation): started as start() does,
   * killed on timeout or abort, its log read into per-stream tails after the exit (podman's follow stream can end
   * before the last lines of a short-lived container), then removed. No engine: SandboxUnavailableError.
   */
  async run(spec: SandboxSpec, opts: SandboxRunOptions): Promise<SandboxRunResult> {
    if (!(await this.ping())) {
      throw new SandboxUnavailableError(`no sandbox for ${spec.agentId}: no container engine answers at ${this.opts.dockerHost}; the command was not run`);
    }
    const started = Date.now();
    const handle = await this.start(spec);
    let timedOut = false;
    const kill = (): void => {
      void this.docker.getContainer(handle.id).kill({ signal: 'SIGKILL' }).catch(() => undefined);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, Math.max(1, opts.timeoutMs));
    opts.signal?.addEventListener('abort', kill, { once: true });
    if (opts.signal?.aborted) kill();
    let code: number;
    try {
      code = await handle.exited;
    } catch {
      code = -1;
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', kill);
    }
    const out = new StreamTail(opts.maxOutputBytes);
    const err = new StreamTail(opts.maxOutputBytes);
    const sink = (t: StreamTail): Writable => new Writable({ write: (chunk: Buffer, _enc, cb) => (t.push(chunk), cb()) });
    await readExitedContainerLogs(this.docker, handle.id, sink(out), sink(err)).catch((e: unknown) => this.log.warn({ container_id: handle.id, err: errMessage(e) }, 'reading the container logs failed'));
    await this.stop(handle.id).catch((e: unknown) => this.log.warn({ container_id: handle.id, err: errMessage(e) }, 'removing the container failed'));
    return {
      exit_code: timedOut ? 124 : code,
      stdout: out.text(),
      stderr: err.text() + (timedOut ? `\ncommand killed after ${Math.round(opts.timeoutMs / 1000)} s` : ''),
      duration_ms: Date.now() - started,
      timed_out: timedOut,
    };
  }

  /** The container's stdout and stderr so far (diagnostics and tests). */
  async output(id: string): Promise<{ stdout: string; stderr: string }> {
    const buf = (await this.docker.getContainer(id).logs({ stdout: true, stderr: true, follow: false })) as unknown as Buffer;
    return demuxDockerStream(Buffer.isBuffer(buf) ? buf : Buffer.from(String(buf)));
  }

  /** Raw inspect data (tests check HostConfig). */
  async inspect(id: string): Promise<Docker.ContainerInspectInfo> {
    return this.docker.getContainer(id).inspect();
  }
}
