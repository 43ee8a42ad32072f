// A real `orch up` node whose agents run in podman (DOCKER_HOST, else the default socket) with the scripted LLM as
// provider `scripted` (model alias `default`), optionally pointed at a FUSE daemon; and a real `orch fuse-daemon`
// whose FSAL is a node's runtime gRPC port. Everything started is stopped by t.teardown.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { ExecutionContext } from 'ava';
import { DEFAULT_DOCKER_HOST } from '../../src/agents/runtime/docker.ts';
import { ORCH_BIN, startOrchNode, type NodeProcess } from './node-process.ts';
import { createTestDatabase } from './pg.ts';

export const dockerHost = process.env.DOCKER_HOST || DEFAULT_DOCKER_HOST;

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

export interface PodmanScratch {
  /** The node's config and data (and a FUSE mount prefix, if the test puts one under it); removed at teardown. */
  dir: string;
  /** A throwaway database for the node, dropped at teardown. */
  databaseUrl: string;
}

export async function podmanScratch(t: ExecutionContext, prefix: string): Promise<PodmanScratch> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const db = await createTestDatabase({ migrated: true });
  t.teardown(() => db.drop());
  return { dir, databaseUrl: db.url };
}

/** A volume as the VolumeService lists it (GET /v1/volumes). */
export interface VolumeJson {
  id: string;
  label: string;
  storage_class: string;
  ttl_hours: number | null;
  size_limit_bytes: number;
  used_bytes: number;
  owner_kind: string;
  owner_ref: string;
}

/** A file of a volume read through the VolumeService's HTTP API. */
export async function volumeFile(s: PodmanNode['s'], volumeId: string, filePath: string): Promise<{ status: number; text: string }> {
  const r = await fetch(`${s.http}/v1/volumes/${volumeId}/files/content?path=${filePath}`, { headers: { authorization: `Bearer ${s.token}` } });
  return { status: r.status, text: await r.text() };
}

export interface PodmanNode {
  node: NodeProcess;
  /** The HTTP base URL and the node's dev token (the shape of execution-scenarios' `api`). */
  s: { http: string; token: string };
}

/** `orch up` with its config in `<dir>/node.yaml` and data in `<dir>/data`, no Redis. */
export async function startPodmanNode(
  t: ExecutionContext,
  o: { dir: string; id: string; llmUrl: string; databaseUrl: string; fusePort?: number },
): Promise<PodmanNode> {
  const configFile = path.join(o.dir, 'node.yaml');
  await writeFile(
    configFile,
    `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: ${o.id} }
spec:
  node: { id: ${o.id}, role: hybrid }
  llm_providers:
    - { name: scripted, type: openai, endpoint: "${o.llmUrl}", api_key: test-key, models: [ { alias: default, model: scripted-1 } ] }
  runtime: { default_isolation: docker, docker_host: "${dockerHost}" }
${o.fusePort !== undefined ? `  fuse: { address: "127.0.0.1:${o.fusePort}" }\n` : ''}`,
  );
  const node = await startOrchNode({ ORCH_CONFIG: configFile, ORCH_DATA_DIR: path.join(o.dir, 'data'), DATABASE_URL: o.databaseUrl, REDIS_URL: undefined, DOCKER_HOST: dockerHost });
  t.teardown(() => node.child.kill('SIGKILL'));
  return { node, s: { http: node.banner.http, token: node.banner.dev_token ?? '' } };
}

export interface FuseDaemon {
  child: ChildProcess;
  /** The banner's word: the FUSE binding is loaded. */
  fuse: boolean;
  /** The banner's address the daemon listens on (FuseMountService). */
  address: string;
  /** The banner's mount prefix. */
  mountPrefix: string;
  /** What the daemon wrote to stderr so far. */
  stderr(): string;
  /** Resolves with the exit code once the daemon has exited. */
  exited: Promise<number | null>;
}

/** `orch fuse-daemon` listening on `port` (0: any free one, read from the banner), mounting under `prefix`, authenticating to the FSAL with `token`;
 * resolves with its banner line read. */
export async function startFuseDaemon(t: ExecutionContext, o: { port: number; fsal: string; prefix: string; token: string }): Promise<FuseDaemon> {
  const child = spawn(process.execPath, [ORCH_BIN, '--json', 'fuse-daemon', '--listen', `127.0.0.1:${o.port}`, '--fsal', o.fsal, '--mount-prefix', o.prefix, '--log-level', 'warn'], {
    env: { ...process.env, ORCH_TOKEN: o.token },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const banner = JSON.parse(
    await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout }).once('line', resolve);
      child.once('exit', () => reject(new Error(`fuse-daemon exited: ${stderr}`)));
    }),
  ) as { fuse_daemon: string; mount_prefix: string; fuse: boolean };
  return { child, fuse: banner.fuse, address: banner.fuse_daemon, mountPrefix: banner.mount_prefix, stderr: () => stderr, exited };
}

/**
 * A podman node with a FUSE daemon of its own: the node's `spec.fuse.address` is the daemon, whose FSAL is the node's
 * runtime gRPC port and which authenticates with the node's (service account) token, mounting under `prefix`.
 */
export async function startFuseNode(
  t: ExecutionContext,
  o: { dir: string; id: string; llmUrl: string; databaseUrl: string; prefix: string },
): Promise<PodmanNode & { daemon: FuseDaemon }> {
  const fusePort = await freePort();
  const { node, s } = await startPodmanNode(t, { dir: o.dir, id: o.id, llmUrl: o.llmUrl, databaseUrl: o.databaseUrl, fusePort });
  const daemon = await startFuseDaemon(t, { port: fusePort, fsal: node.banner.grpc, prefix: o.prefix, token: s.token });
  return { node, s, daemon };
}
