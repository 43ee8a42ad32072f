// Picks the sandbox runtime for an isolation kind and checks whether a Docker-API engine answers.
import http from 'node:http';
import https from 'node:https';
import { DEFAULT_DOCKER_HOST, DockerRuntime, dockerConnection, type DockerRuntimeOptions } from './docker.js';
import { ProcessRuntime, type ProcessRuntimeOptions } from './process.js';
import type { ContainerRuntime, RuntimeOptions } from './types.js';

export { DEFAULT_DOCKER_HOST, DEFAULT_RUNTIME_IMAGE } from './docker.js';

export interface CreateRuntimeOptions extends RuntimeOptions {
  /** DOCKER_HOST for 'docker' (default: env DOCKER_HOST, else unix:///run/orch-podman/podman.sock). */
  dockerHost?: string;
  docker?: Partial<Omit<DockerRuntimeOptions, keyof RuntimeOptions | 'dockerHost'>>;
  process?: Partial<Omit<ProcessRuntimeOptions, keyof RuntimeOptions>>;
}

/** DOCKER_HOST from the environment, else the podman socket scripts/setup-podman.sh starts. */
export function resolveDockerHost(env: NodeJS.ProcessEnv = process.env): string {
  return env.DOCKER_HOST && env.DOCKER_HOST !== '' ? env.DOCKER_HOST : DEFAULT_DOCKER_HOST;
}

export function createRuntime(kind: 'docker', opts: CreateRuntimeOptions): DockerRuntime;
export function createRuntime(kind: 'process', opts: CreateRuntimeOptions): ProcessRuntime;
export function createRuntime(kind: 'docker' | 'process', opts: CreateRuntimeOptions): ContainerRuntime;
export function createRuntime(kind: 'docker' | 'process', opts: CreateRuntimeOptions): ContainerRuntime {
  const base: RuntimeOptions = { logger: opts.logger, ...(opts.nodeId !== undefined ? { nodeId: opts.nodeId } : {}) };
  switch (kind) {
    case 'docker':
      return new DockerRuntime({ ...opts.docker, dockerHost: opts.dockerHost ?? resolveDockerHost(), ...base });
    case 'process':
      return new ProcessRuntime({ ...opts.process, ...base });
    default: {
      const never: never = kind;
      throw new Error(`unknown isolation kind ${String(never)}`);
    }
  }
}

/** True when a Docker-API engine answers GET /_ping at `dockerHost` within `timeoutMs`. Never throws. */
export async function dockerAvailable(dockerHost: string = resolveDockerHost(), timeoutMs = 2000): Promise<boolean> {
  let conn;
  try {
    conn = dockerConnection(dockerHost);
  } catch {
    return false;
  }
  return new Promise<boolean>((resolve) => {
    const lib = conn.protocol === 'https' ? https : http;
    const req = lib.request(
      conn.socketPath
        ? { socketPath: conn.socketPath, path: '/_ping', method: 'GET', timeout: timeoutMs }
        : { host: conn.host, port: conn.port, path: '/_ping', method: 'GET', timeout: timeoutMs },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
    req.end();
  });
}
