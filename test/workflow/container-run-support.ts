// Shared by the ContainerRun and ParallelContainerRun tests: a real DockerRuntime against DOCKER_HOST (podman here),
// a StateRunContext built by hand (the engine is not involved: these test the runners), and state builders with the
// parser's defaults. A missing engine or image fails the tests; they are never skipped.
import Handlebars from 'handlebars';
import { renderShellTemplate } from '../../src/workflow/template/render.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_RUNTIME_IMAGE } from '../../src/agents/runtime/docker.ts';
import { createRuntime, dockerAvailable, resolveDockerHost } from '../../src/agents/runtime/select.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { StateRunContext } from '../../src/workflow/engine/runner-types.ts';
import type { ContainerRunState, ContainerStep } from '../../src/workflow/manifest/types.ts';
import { LABEL_VISIT_KEY, type ContainerDeps } from '../../src/workflow/states/container-step.ts';

export const IMAGE = DEFAULT_RUNTIME_IMAGE;
export const dockerHost = resolveDockerHost();
export const runtime = createRuntime('docker', { logger: silentLogger(), dockerHost, nodeId: 'test-node' });

let ready: Promise<string | null> | undefined;
/** null when the engine answers and the image exists; else the reason (the test then fails with it). */
export function engineProblem(): Promise<string | null> {
  ready ??= (async () => {
    if (!(await dockerAvailable(dockerHost, 30_000))) return `no Docker-API engine at DOCKER_HOST=${dockerHost}; run scripts/setup-podman.sh`;
    try {
      await runtime.docker.getImage(IMAGE).inspect();
    } catch {
      return `image ${IMAGE} is missing; run scripts/setup-podman.sh to build it`;
    }
    return null;
  })();
  return ready;
}

export async function tmpDir(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), 'orch-cr-'));
}

/** volume id → host directory, as the workflow storage service would answer. */
export function deps(volumes: Record<string, string> = {}, over: Partial<ContainerDeps> = {}): ContainerDeps {
  return {
    runtime,
    resolveVolume: async ({ volumeId }) => {
      const p = volumes[volumeId];
      if (!p) throw new Error(`unknown volume ${volumeId}`);
      return p;
    },
    ...over,
  };
}

export function ctx(over: Partial<StateRunContext> & { scope?: Record<string, unknown> } = {}): StateRunContext {
  const executionId = randomUUID();
  const stateName = over.stateName ?? 'build';
  const scope = over.scope ?? {};
  return {
    workflowExecutionId: executionId,
    tenantId: 'tenant-a',
    stateName,
    visit: 1,
    visitKey: `${executionId}:${stateName}:1:${randomBytes(3).toString('hex')}`,
    render: (t: string) => Handlebars.compile(t, { noEscape: true, strict: false })(scope),
    renderShell: (t: string) => renderShellTemplate(t, scope as never),
    signal: new AbortController().signal,
    storage: { shared: {} },
    depth: 0,
    ancestry: [],
    logger: silentLogger(),
    ...over,
  };
}

export function step(over: Partial<ContainerStep> & Pick<ContainerStep, 'command'>): ContainerStep {
  return {
    image: IMAGE,
    image_pull_policy: 'Never',
    shell: false,
    env: {},
    workdir: '/workspace',
    volumes: [],
    resources: { timeout_seconds: 60 },
    ...over,
  };
}

export function containerState(over: Partial<ContainerRunState> & Pick<ContainerRunState, 'command'>): ContainerRunState {
  return {
    kind: 'ContainerRun',
    max_state_visits: 5,
    timeout_seconds: 300,
    transitions: [],
    retry: { max_attempts: 1, backoff_seconds: 0 },
    ...step(over),
    ...over,
  };
}

/** Containers still carrying this visit's label (must be none once a runner returned). */
export async function leftovers(visitKeyPrefix: string): Promise<string[]> {
  const list = await runtime.docker.listContainers({ all: true, filters: { label: [LABEL_VISIT_KEY] } });
  return list.filter((c) => (c.Labels?.[LABEL_VISIT_KEY] ?? '').startsWith(visitKeyPrefix)).map((c) => c.Id);
}

/** Polls until a container with this visit label runs; returns its id. */
export async function waitRunning(labelValue: string, timeoutMs = 30_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const list = await runtime.docker.listContainers({ filters: { label: [`${LABEL_VISIT_KEY}=${labelValue}`] } });
    const c = list[0];
    if (c) return c.Id;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no running container labelled ${labelValue} within ${timeoutMs} ms`);
}
