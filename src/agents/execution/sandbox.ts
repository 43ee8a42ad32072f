// The sandbox of one execution incarnation: its volumes (host directories that outlive the sandbox, so a resumed
// execution finds its files), the run directory holding the gateway socket, and the container or process itself.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../logging/logger.ts';
import type { AgentManifest } from '../manifest/types.ts';
import type { ContainerRuntime, SandboxHandle, SandboxMount } from '../runtime/types.ts';
import type { GatewayChannel } from './gateway-channel.ts';
import { listenGatewaySocket, type GatewayRegistry, type SocketGateway } from './gateway-server.ts';
import { executionRunDir } from './run-dir.ts';
import type { Mount } from './tools.ts';

export const BOOTSTRAP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bootstrap');
export const SANDBOX_BOOTSTRAP = '/orch/bin/bootstrap.mjs';
export const SANDBOX_RUN_DIR = '/orch/run';
export const WORKSPACE = '/workspace';
export const EXECUTION_LABEL = 'orch.execution_id';
/** The container_id an agent sends to AttestAgent, handed into a process-isolated sandbox (docs/SEAL.md §1). */
export const SEAL_CONTAINER_ID_ENV = 'ORCH_SEAL_CONTAINER_ID';

/**
 * The attestation proof of a process-isolated sandbox: its id is `process-<execution_id>`, derivable by anyone who
 * knows the execution id, so a random secret goes with it into the sandbox's environment and only the secret's SHA-256
 * is kept (executions.attestation_secret_sha256). Never logged; a new one per sandbox incarnation.
 */
export function attestationProof(containerId: string): { containerId: string; sha256: string } {
  const secret = randomBytes(32).toString('base64url');
  return { containerId: `${containerId}:${secret}`, sha256: createHash('sha256').update(secret, 'utf8').digest('hex') };
}

export function volumeRoot(dataDir: string, executionId: string): string {
  return path.join(dataDir, 'volumes', executionId);
}

/** The execution's volumes: /workspace always, plus spec.volumes, each a directory under the data dir. */
export async function prepareVolumes(dataDir: string, executionId: string, manifest: AgentManifest): Promise<Mount[]> {
  const root = volumeRoot(dataDir, executionId);
  const mounts: Mount[] = [{ sandboxPath: WORKSPACE, hostPath: path.join(root, 'workspace'), readOnly: false }];
  for (const v of manifest.spec.volumes) {
    if (v.mount_path === WORKSPACE) continue;
    if (v.volume_id !== undefined) throw new Error(`volume ${v.name} (${v.volume_id}) needs the node's volume service to be mounted`);
    mounts.push({ sandboxPath: v.mount_path, hostPath: path.join(root, v.name), readOnly: v.access_mode === 'read-only' });
  }
  for (const m of mounts) await mkdir(m.hostPath, { recursive: true });
  return mounts;
}

export interface Sandbox {
  handle: SandboxHandle;
  /** The dispatch gateway the sandbox's bootstrap speaks to; absent for an idle sandbox (`direct`). */
  gateway?: SocketGateway;
  /** An idle sandbox (process isolation): no bootstrap runs in it; the loop runs each command through
   * runtime.exec(), in a fresh bubblewrap sandbox of the same spec. */
  direct: boolean;
  runtime: ContainerRuntime;
  /** SHA-256 (hex) of the attestation secret handed into the sandbox (process isolation); undefined for docker. */
  attestationSecretSha256?: string;
  stop(): Promise<void>;
}

export interface SandboxOptions {
  runtime: ContainerRuntime;
  registry: GatewayRegistry;
  /** The bootstrap's channel; none for an idle sandbox (runsIdle). */
  channel: GatewayChannel | undefined;
  dataDir: string;
  nodeId: string;
  executionId: string;
  agentId: string;
  manifest: AgentManifest;
  mounts: Mount[];
  defaultImage: string;
  logger: Logger;
}

/** The environment of the execution's commands (and of its bootstrap, which adds the gateway's address). */
function sandboxEnv(o: SandboxOptions): Record<string, string> {
  const m = o.manifest;
  return { ...m.spec.env, ORCH_AGENT_ID: o.agentId, ORCH_EXECUTION_ID: o.executionId, ORCH_MODEL_ALIAS: m.spec.runtime.model, HOME: WORKSPACE };
}

/**
 * Process isolation (issue 24): an idle sandbox, no resident process. A resident Node.js bootstrap cost every
 * execution ~70 ms of CPU to boot and ~45 MiB RSS (3 processes) for its whole life, a unix-socket HTTP server and a
 * run directory in the node, and two HTTP exchanges per command — to run commands the node can start itself. Each
 * command now gets a fresh bubblewrap sandbox made from the same spec (mounts, environment, the attestation secret,
 * its own network namespace with slirp4netns when the agent has network): the same isolation from the host and from
 * other executions, and between two commands of one execution only /workspace and the volumes persist (a fresh
 * /tmp, no process left running).
 */
async function startIdleSandbox(o: SandboxOptions): Promise<Sandbox> {
  await o.runtime.reap(EXECUTION_LABEL, o.executionId).catch((err: unknown) => o.logger.warn({ err }, 'reaping old sandboxes failed'));
  const m = o.manifest;
  const proof = attestationProof(`process-${o.executionId}`);
  const handle = await o.runtime.start({
    executionId: o.executionId,
    agentId: o.agentId,
    command: [],
    idle: true,
    env: sandboxEnv(o),
    secretEnv: { [SEAL_CONTAINER_ID_ENV]: proof.containerId },
    mounts: o.mounts.map((x) => ({ hostPath: x.hostPath, sandboxPath: x.sandboxPath, readOnly: x.readOnly })),
    workdir: WORKSPACE,
    network: m.spec.security.network.mode === 'allow',
    labels: { [EXECUTION_LABEL]: o.executionId, 'orch.agent_id': o.agentId, 'orch.node_id': o.nodeId },
  });
  if (!proof.containerId.startsWith(`${handle.id}:`)) o.logger.warn({ container_id: handle.id }, 'the process sandbox id is not process-<execution_id>: SEAL attestation will fail');
  let stopped = false;
  return {
    handle,
    direct: true,
    runtime: o.runtime,
    attestationSecretSha256: proof.sha256,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await o.runtime.stop(handle.id);
    },
  };
}

/** Whether executions on `runtime` get an idle sandbox (no bootstrap, no gateway channel): process isolation. */
export function runsIdle(runtime: ContainerRuntime): boolean {
  return runtime.kind === 'process' && runtime.idleSandboxes === true && runtime.exec !== undefined;
}

export async function startSandbox(o: SandboxOptions): Promise<Sandbox> {
  if (runsIdle(o.runtime)) return startIdleSandbox(o);
  if (!o.channel) throw new Error('a sandbox with a bootstrap needs its gateway channel');
  const channel = o.channel;
  // Not under the data dir: a unix socket path must fit in 107 bytes whatever the data dir's length (run-dir.ts).
  const runDir = await executionRunDir(o.dataDir, o.executionId);
  // Leftovers of an earlier incarnation (a crashed node) go first: one execution, one sandbox.
  await o.runtime.reap(EXECUTION_LABEL, o.executionId).catch((err: unknown) => o.logger.warn({ err }, 'reaping old sandboxes failed'));
  const gateway = await listenGatewaySocket(o.registry, channel, path.join(runDir, 'gateway.sock'), o.logger);
  const m = o.manifest;
  const mounts: SandboxMount[] = [
    { hostPath: BOOTSTRAP_DIR, sandboxPath: path.posix.dirname(SANDBOX_BOOTSTRAP), readOnly: true },
    { hostPath: runDir, sandboxPath: SANDBOX_RUN_DIR, readOnly: false },
    ...o.mounts.map((x) => ({ hostPath: x.hostPath, sandboxPath: x.sandboxPath, readOnly: x.readOnly })),
  ];
  // Process isolation: the id is predictable, so the proof is the id plus a secret only the sandbox sees.
  const proof = o.runtime.kind === 'process' ? attestationProof(`process-${o.executionId}`) : undefined;
  try {
    const handle = await o.runtime.start({
      executionId: o.executionId,
      agentId: o.agentId,
      image: m.spec.runtime.image ?? o.defaultImage,
      imagePullPolicy: m.spec.runtime.image_pull_policy,
      command: ['node', SANDBOX_BOOTSTRAP],
      env: { ...sandboxEnv(o), ORCH_ORCHESTRATOR_URL: `unix:${SANDBOX_RUN_DIR}/gateway.sock` },
      // Not in env: process isolation would put it on bwrap's command line, which a host `ps` shows to every user.
      ...(proof ? { secretEnv: { [SEAL_CONTAINER_ID_ENV]: proof.containerId } } : {}),
      mounts,
      workdir: WORKSPACE,
      network: m.spec.security.network.mode === 'allow',
      ...(m.spec.security.resources.cpu !== undefined ? { cpu: m.spec.security.resources.cpu } : {}),
      ...(m.spec.security.resources.memory_bytes !== undefined ? { memoryBytes: m.spec.security.resources.memory_bytes } : {}),
      labels: { [EXECUTION_LABEL]: o.executionId, 'orch.agent_id': o.agentId, 'orch.node_id': o.nodeId },
    });
    let stopped = false;
    if (proof && !proof.containerId.startsWith(`${handle.id}:`)) o.logger.warn({ container_id: handle.id }, 'the process sandbox id is not process-<execution_id>: SEAL attestation will fail');
    return {
      handle,
      gateway,
      direct: false,
      runtime: o.runtime,
      ...(proof ? { attestationSecretSha256: proof.sha256 } : {}),
      stop: async () => {
        if (stopped) return;
        stopped = true;
        await Promise.allSettled([o.runtime.stop(handle.id), gateway.close()]);
        await rm(runDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await gateway.close();
    throw err;
  }
}
