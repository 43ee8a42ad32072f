// One container of a ContainerRun or ParallelContainerRun state (seed 002, format 1.1): render the command and env,
// mount the workflow's volumes, start it through the agents' DockerRuntime (which owns image pull policy, labels,
// cpu/memory and kill+remove), capture stdout and stderr up to 1 MiB each while it runs, enforce the hard
// `resources.timeout`, stop it when the state is aborted, and always remove it afterwards.
//
// Crash safety: every container carries the label `orch.visit_key` = the visit key (+ `:step` for a parallel
// member). Before a new attempt starts, containers left with that label by a node that died mid-visit are reaped,
// so a re-run of the same visit never leaves two copies of the step running.
import { Writable } from 'node:stream';
import { readExitedContainerLogs } from '../../agents/runtime/container-logs.ts';
import type { DockerRuntime } from '../../agents/runtime/docker.ts';
import type { SandboxMount } from '../../agents/runtime/types.ts';
import type { StateRunContext } from '../engine/runner-types.ts';
import type { ContainerStep } from '../manifest/types.ts';

/** Captured bytes per stream (seed 002: "each captured stream up to 1 MB"). */
export const MAX_CAPTURE_BYTES = 1024 * 1024;
export const LABEL_VISIT_KEY = 'orch.visit_key';
export const LABEL_STATE = 'orch.workflow_state';

/** One container's use of a workflow-level volume. */
export interface VolumeUse {
  tenantId: string;
  workflowExecutionId: string;
  /** `workspace` or a shared_volumes name. */
  name: string;
  /** The volume id from ctx.storage. */
  volumeId: string;
  mountPath: string;
  readOnly: boolean;
}

/**
 * Where a workflow-level volume is on the host for one container (a FUSE mount or its directory). Injected: the
 * workflow storage service owns volumes. Every resolved use is given back to `settleVolume` once the container is gone.
 */
export type VolumeResolver = (ref: VolumeUse) => Promise<string>;

/**
 * Called for every resolved volume once its container is gone (whatever the outcome): the storage service unmounts
 * a FUSE mount at its last use, or re-measures a directory a read-write bind let the container write to directly.
 */
export type VolumeSettler = (ref: VolumeUse) => Promise<void>;

export interface ContainerDeps {
  runtime: DockerRuntime;
  resolveVolume: VolumeResolver;
  settleVolume?: VolumeSettler;
  /** Bytes kept per stream; default MAX_CAPTURE_BYTES (tests may lower it). */
  maxCaptureBytes?: number;
}

export interface ContainerAttempt {
  /** null when no container ran (the image is missing, a volume is not declared, ...). */
  exit_code: number | null;
  stdout: string;
  stderr: string;
  duration_ms: number;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  /** Killed by resources.timeout. */
  timed_out: boolean;
  /** Stopped because ctx.signal aborted (state timeout or workflow cancel). */
  aborted: boolean;
  /** Why the attempt failed before or around the container (not set for a plain non-zero exit). */
  error?: string;
}

/** Keeps the first `max` bytes written to it and counts the rest. */
class CappedSink extends Writable {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  truncated = false;

  constructor(private readonly max: number) {
    super();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    const room = this.max - this.kept;
    if (room > 0) {
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
      this.chunks.push(Buffer.from(part));
      this.kept += part.length;
    }
    if (chunk.length > room) this.truncated = true;
    cb();
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

const SHELLS = new Set(['sh', 'bash', 'dash', 'ash', 'zsh', 'ksh']);

/**
 * The argv of the container: Handlebars per element. A shell script — `shell: true` (the elements joined and run
 * with `sh -c`) or the element after `-c` of an explicit shell (`[sh, -c, "…"]`) — is rendered as a shell template:
 * its values reach the shell as ORCH_VALUE_<n> variables (`env`), never as code (src/workflow/template/shell.ts).
 */
export function renderCommand(
  step: Pick<ContainerStep, 'command' | 'shell'>,
  ctx: Pick<StateRunContext, 'render' | 'renderShell'>,
): { argv: string[]; env: Record<string, string> } {
  if (step.shell) {
    const { script, env } = ctx.renderShell(step.command.join(' '));
    return { argv: ['sh', '-c', script], env };
  }
  const isShell = step.command.length > 0 && SHELLS.has(step.command[0]!.split('/').pop()!);
  let env: Record<string, string> = {};
  const argv = step.command.map((c, i) => {
    if (isShell && i > 0 && step.command[i - 1] === '-c' && i === step.command.indexOf('-c') + 1) {
      const r = ctx.renderShell(c);
      env = r.env;
      return r.script;
    }
    return ctx.render(c);
  });
  return { argv, env };
}

export async function resolveMounts(step: ContainerStep, ctx: StateRunContext, resolve: VolumeResolver, used: VolumeUse[] = []): Promise<SandboxMount[]> {
  const mounts: SandboxMount[] = [];
  for (const v of step.volumes) {
    const volumeId = v.name === 'workspace' ? ctx.storage.workspace : ctx.storage.shared[v.name];
    if (!volumeId) {
      const declared = [...(ctx.storage.workspace ? ['workspace'] : []), ...Object.keys(ctx.storage.shared)];
      throw new Error(`volume "${v.name}" is not declared in spec.storage of this workflow ` +
        `(declared: ${declared.length > 0 ? declared.join(', ') : 'none'})`);
    }
    const use: VolumeUse = { tenantId: ctx.tenantId, workflowExecutionId: ctx.workflowExecutionId, name: v.name, volumeId, mountPath: v.mount_path, readOnly: v.read_only };
    const hostPath = await resolve(use);
    used.push(use);
    mounts.push({ hostPath, sandboxPath: v.mount_path, readOnly: v.read_only });
  }
  return mounts;
}

/** Gives back every volume use resolved for the attempt (after its container is gone). Never throws. */
async function settleMounts(used: VolumeUse[], ctx: StateRunContext, deps: ContainerDeps): Promise<void> {
  if (!deps.settleVolume) return;
  for (const use of used.splice(0)) {
    await deps.settleVolume(use).catch((e: unknown) =>
      ctx.logger.warn({ volume: use.volumeId, err: e instanceof Error ? e.message : String(e) }, 'releasing a workflow volume failed'));
  }
}

function abortReason(signal: AbortSignal): string {
  const r: unknown = signal.reason;
  if (r instanceof Error) return r.message;
  return typeof r === 'string' ? r : 'the state was aborted';
}

/**
 * Runs one attempt of one container step to its end and removes the container. Never throws: every failure comes
 * back as an attempt with `error` (and exit_code null when no container ran).
 */
export async function runContainerAttempt(
  step: ContainerStep,
  ctx: StateRunContext,
  deps: ContainerDeps,
  labelKey: string,
): Promise<ContainerAttempt> {
  const used: VolumeUse[] = [];
  try {
    return await runAttempt(step, ctx, deps, labelKey, used);
  } finally {
    // Whatever happened (no container, a failed start, an exit, a kill): the volumes resolved are given back.
    await settleMounts(used, ctx, deps);
  }
}

async function runAttempt(
  step: ContainerStep,
  ctx: StateRunContext,
  deps: ContainerDeps,
  labelKey: string,
  used: VolumeUse[],
): Promise<ContainerAttempt> {
  const started = Date.now();
  const max = deps.maxCaptureBytes ?? MAX_CAPTURE_BYTES;
  const out = new CappedSink(max);
  const err = new CappedSink(max);
  const result = (over: Partial<ContainerAttempt>): ContainerAttempt => ({
    exit_code: null,
    stdout: out.text(),
    stderr: err.text(),
    duration_ms: Date.now() - started,
    stdout_truncated: out.truncated,
    stderr_truncated: err.truncated,
    timed_out: false,
    aborted: false,
    ...over,
  });
  if (ctx.signal.aborted) return result({ aborted: true, error: abortReason(ctx.signal) });

  let command: string[];
  let env: Record<string, string>;
  let mounts: SandboxMount[];
  try {
    const rendered = renderCommand(step, ctx);
    command = rendered.argv;
    if (command.length === 0) throw new Error('command is empty');
    env = { ...Object.fromEntries(Object.entries(step.env).map(([k, v]) => [k, ctx.render(v)])), ...rendered.env };
    mounts = await resolveMounts(step, ctx, deps.resolveVolume, used);
    if (step.registry_credentials !== undefined && step.image_pull_policy !== 'Never') {
      const present = await deps.runtime.docker.getImage(step.image).inspect().then(() => true, () => false);
      if (step.image_pull_policy === 'Always' || !present) {
        // There is no secrets vault in this orchestrator yet: a private pull cannot be authenticated.
        throw new Error(`registry_credentials (${step.registry_credentials}) is not implemented: pulling ${step.image} ` +
          'from a private registry needs the secrets vault, which this orchestrator does not have yet');
      }
    }
    // A node that died during this same visit may have left its container running: remove it first.
    await deps.runtime.reap(LABEL_VISIT_KEY, labelKey);
  } catch (e) {
    return result({ error: e instanceof Error ? e.message : String(e) });
  }

  let handle: { id: string; exited: Promise<number> };
  try {
    handle = await deps.runtime.start({
      executionId: ctx.workflowExecutionId,
      agentId: `workflow-state:${ctx.stateName}`,
      image: step.image,
      imagePullPolicy: step.image_pull_policy,
      // `command` is the entrypoint override of seed 002: it replaces whatever ENTRYPOINT the image declares.
      entrypoint: command,
      command: [],
      env,
      mounts,
      workdir: step.workdir,
      network: false,
      ...(step.resources.cpu !== undefined ? { cpu: step.resources.cpu } : {}),
      ...(step.resources.memory_bytes !== undefined ? { memoryBytes: step.resources.memory_bytes } : {}),
      labels: { [LABEL_VISIT_KEY]: labelKey, [LABEL_STATE]: ctx.stateName },
    });
  } catch (e) {
    return result({ error: e instanceof Error ? e.message : String(e) });
  }

  let timedOut = false;
  let aborted = false;
  // Kill only (no removal yet): the logs of the killed container are still read below.
  const kill = (): void => {
    void deps.runtime.docker.getContainer(handle.id).kill({ signal: 'SIGKILL' }).catch(() =>
      deps.runtime.stop(handle.id).catch((e: unknown) =>
        ctx.logger.warn({ container_id: handle.id, err: e instanceof Error ? e.message : String(e) }, 'stopping container failed')));
  };
  const onAbort = (): void => {
    aborted = true;
    kill();
  };
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  // Aborted while the container was being created (a long pull): the listener above came too late for it.
  if (ctx.signal.aborted) onAbort();
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, step.resources.timeout_seconds * 1000);

  let exitCode: number;
  try {
    exitCode = await handle.exited;
  } catch (e) {
    exitCode = -1;
    ctx.logger.warn({ container_id: handle.id, err: e instanceof Error ? e.message : String(e) }, 'waiting for the container failed');
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', onAbort);
  }
  try {
    // Both sinks over the cap: nothing more will be kept, stop reading.
    await readExitedContainerLogs(deps.runtime.docker, handle.id, out, err, () => out.truncated && err.truncated);
  } catch (e) {
    ctx.logger.warn({ container_id: handle.id, err: e instanceof Error ? e.message : String(e) }, 'reading the container logs failed');
  }
  try {
    await deps.runtime.stop(handle.id);
  } catch (e) {
    ctx.logger.warn({ container_id: handle.id, err: e instanceof Error ? e.message : String(e) }, 'removing the container failed');
  }

  if (timedOut) {
    return result({ exit_code: exitCode, timed_out: true, error: `container killed after resources.timeout of ${step.resources.timeout_seconds} s` });
  }
  if (aborted) return result({ exit_code: exitCode, aborted: true, error: `container stopped: ${abortReason(ctx.signal)}` });
  return result({ exit_code: exitCode });
}
