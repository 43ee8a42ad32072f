// An in-process orch node for integration tests: startNode on a NodeConfig written here (random node id, ephemeral
// ports, silent log, a fresh test database unless one is given, a temp data_dir, process isolation unless asked
// otherwise, optionally an OpenAI-compatible provider `default` at a scripted LLM and Redis), the dev identity of its
// data_dir for tokens, and a small JSON-over-HTTP helper. Everything it starts is handed to `defer` for cleanup.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadNodeConfig } from '../../src/config/load.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { startNode, type RunningNode } from '../../src/node/node.ts';
import { ensureDevIdentity, type DevIdentity, type DevTokenRequest } from '../../src/auth/dev-identity.ts';
import { DEFAULT_DOCKER_HOST } from '../../src/agents/runtime/docker.ts';
import { createTestDatabase } from './pg.ts';

/** Registers a cleanup; a test's `t` (t.teardown) or a list run in reverse by test.after.always (no t.teardown in hooks). */
export type Defer = (fn: () => Promise<unknown> | unknown) => void;
export type DeferTarget = Defer | { teardown(fn: () => Promise<unknown> | unknown): void };

export interface TestNodeOptions {
  /** Prefix of the node id (`<name>-<random>`), config name and temp dir. Default `test`. */
  name?: string;
  /** The whole node id instead of `<name>-<random>`. */
  id?: string;
  role?: 'hybrid' | 'controller' | 'worker';
  /** A database of the caller's; default a fresh test database dropped at cleanup. */
  databaseUrl?: string;
  /** A data_dir of the caller's; default a temp dir removed at cleanup. */
  dataDir?: string;
  /** An OpenAI-compatible endpoint (the scripted LLM): provider `s` with the model alias `default`. */
  llmUrl?: string;
  /** Default `process`; `docker` uses DOCKER_HOST (or the default podman socket). */
  isolation?: 'process' | 'docker';
  redisUrl?: string;
  /** More lines under `spec:` (two-space indented, newline-terminated), e.g. `  cortex: {}\n`. */
  extraYaml?: string;
}

export interface TestNode {
  node: RunningNode;
  /** The HTTP base URL. */
  http: string;
  dataDir: string;
  databaseUrl: string;
  identity: DevIdentity;
  /** A dev token; no tenant: the home tenant (orch-system); no role: `user`. */
  token(tenant?: string, role?: DevTokenRequest['role']): Promise<string>;
  /** JSON over HTTP with a bearer token (default: a token without tenant; `''`: no authorization header) and any
   * more headers; an empty response body answers `{}`. */
  api<T = Record<string, unknown>>(method: string, url: string, body?: unknown, token?: string, headers?: Record<string, string>): Promise<{ status: number; body: T }>;
  /** An MCP client (the official SDK over Streamable HTTP at /v1/mcp) with this token; closed at cleanup. */
  mcp(token: string, clientName?: string): Promise<Client>;
}

function deferOf(target: DeferTarget): Defer {
  return typeof target === 'function' ? target : (fn) => target.teardown(fn);
}

export async function startTestNode(target: DeferTarget, o: TestNodeOptions = {}): Promise<TestNode> {
  const defer = deferOf(target);
  const name = o.name ?? 'test';
  let databaseUrl = o.databaseUrl;
  if (databaseUrl === undefined) {
    const db = await createTestDatabase({ migrated: true });
    defer(() => db.drop());
    databaseUrl = db.url;
  }
  const dataDir = o.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), `orch-${name}-`)));
  if (!o.dataDir) defer(() => rm(dataDir, { recursive: true, force: true }));
  const runtime =
    o.isolation === 'docker' ? `{ default_isolation: docker, docker_host: "${process.env.DOCKER_HOST || DEFAULT_DOCKER_HOST}" }` : '{ default_isolation: process }';
  const lines = [
    `  node: { id: ${o.id ?? `${name}-${randomUUID().slice(0, 8)}`}${o.role ? `, role: ${o.role}` : ''} }`,
    '  http: { bind: 127.0.0.1, port: 0 }',
    '  grpc: { port: 0 }',
    '  cluster: { cluster_grpc_port: 0 }',
    '  log: { level: silent }',
    `  database: { url: "${databaseUrl}" }`,
    ...(o.redisUrl ? [`  redis: { url: "${o.redisUrl}" }`] : []),
    `  data_dir: ${dataDir}`,
    `  runtime: ${runtime}`,
    ...(o.llmUrl ? [`  llm_providers: [ { name: s, type: openai, endpoint: "${o.llmUrl}", api_key: k, models: [ { alias: default, model: m } ] } ]`] : []),
  ];
  const text = `apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: ${name} }\nspec:\n${lines.join('\n')}\n${o.extraYaml ?? ''}`;
  const node = await startNode(loadNodeConfig({ text, env: {} }), silentLogger());
  defer(() => node.stop());
  const identity = await ensureDevIdentity(dataDir);
  const admin = await identity.sign({});
  const http = node.addresses.http;
  return {
    node,
    http,
    dataDir,
    databaseUrl,
    identity,
    token: (tenant, role) => identity.sign({ ...(tenant ? { tenant } : {}), ...(role ? { role } : {}) }),
    async api(method, url, body, token = admin, more = {}) {
      const headers: Record<string, string> = { ...more };
      if (token !== '') headers.authorization = `Bearer ${token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${http}${url}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
      const txt = await res.text();
      return { status: res.status, body: (txt ? JSON.parse(txt) : {}) as never };
    },
    async mcp(token, clientName = `${name}-test`) {
      const client = new Client({ name: clientName, version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL('/v1/mcp', http), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      defer(() => client.close());
      return client;
    },
  };
}
