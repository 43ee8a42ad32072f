// Real-process cluster fixtures shared by the tests that run `orch up` controllers and workers on loopback: a scratch
// database and directory, a node starter writing each node's NodeConfig, the scripted model's provider section,
// membership polling through the controller's API, and the `hold:<key>` model the routing tests steer with.
// The benches of worker loss use them too: they pass a Cleanup where a test passes its ExecutionContext.
import type { ExecutionContext } from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { openDb } from '../../src/storage/open.ts';
import { createTestDatabase } from '../support/pg.ts';
import { eventually, startOrchNode, type NodeProcess } from '../support/node-process.ts';
import { startScriptedLlm, type ChatRequest } from '../support/scripted-llm.ts';
import { api, type Api } from './support.ts';

/** Where a fixture registers its clean-up: an ava test's `t`, or a bench's Cleanup. */
export type Teardowns = Pick<ExecutionContext, 'teardown'>;

/** Teardowns for code that runs outside ava (benches): run() undoes what was registered, the last first, as ava does. */
export class Cleanup implements Teardowns {
  private readonly fns: (() => unknown)[] = [];

  readonly teardown = (fn: () => unknown): void => {
    this.fns.push(fn);
  };

  async run(): Promise<void> {
    // Best effort: one failed clean-up (a database already dropped) must not keep the others from running.
    for (const fn of this.fns.splice(0).reverse()) await Promise.resolve().then(fn).catch(() => undefined);
  }
}

/** The text of every message of a chat request, joined: what the scripted models match on. */
export function conversation(body: ChatRequest): string {
  return body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
}

export interface HoldingLlm {
  url: string;
  /** Release functions of the requests being held, by key. */
  holds: Map<string, () => void>;
  /** Keys whose requests have reached the model. */
  asked: Set<string>;
}

/** A scripted model answering `done`; a request whose text has `hold:<key>` waits until the test calls holds.get(key)(). */
export async function startHoldingLlm(t: Teardowns): Promise<HoldingLlm> {
  const holds = new Map<string, () => void>();
  const asked = new Set<string>();
  const llm = await startScriptedLlm(async (body) => {
    const m = /hold:(\w+)/.exec(conversation(body));
    if (m?.[1]) {
      asked.add(m[1]);
      await new Promise<void>((r) => holds.set(m[1]!, r));
    }
    return { content: 'done' };
  });
  t.teardown(() => {
    for (const r of holds.values()) r();
    return llm.close();
  });
  return { url: llm.url, holds, asked };
}

/** The NodeConfig lines of a worker's model provider: the scripted server at `url` as the alias `default`. */
export function llmProviders(url: string): string {
  return `  llm_providers:\n    - { name: scripted, type: openai, endpoint: "${url}", api_key: test-key, models: [ { alias: default, model: scripted-1 } ] }\n`;
}

export interface Scratch {
  /** The throwaway database every node of the test shares. */
  url: string;
  /** NodeConfig files and each node's data directory. */
  dir: string;
  /** The test's own connection to that database (migrated). */
  db: Db;
}

/** A throwaway PostgreSQL database and a scratch directory, both removed at teardown. */
export async function scratch(t: Teardowns, prefix: string): Promise<Scratch> {
  const database = await createTestDatabase({ migrated: true });
  t.teardown(() => database.drop());
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const db = await openDb({ url: database.url, dataDir: dir }, silentLogger());
  t.teardown(() => db.close());
  return { url: database.url, dir, db };
}

export interface StarterOptions {
  /** REDIS_URL of the nodes; none by default (the controller relays what the workers stream back). */
  redisUrl?: string;
  /** NodeConfig lines appended to every node's spec (e.g. a shared `auth:` section). */
  specTail?: string;
  /** More environment of the node processes (e.g. ORCH_LOG_LEVEL). */
  env?: Record<string, string | undefined>;
}

/**
 * Returns start(name, specLines): writes a NodeConfig named `name` with those spec lines and runs `orch up` on the
 * scratch database. Each node is killed at teardown; SIGCONT first, since a test may leave it frozen with SIGSTOP.
 */
export function nodeStarter(t: Teardowns, s: Scratch, o: StarterOptions = {}): (name: string, spec: string) => Promise<NodeProcess> {
  return async (name, spec) => {
    const file = path.join(s.dir, `${name}.yaml`);
    await writeFile(file, `apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: ${name} }\nspec:\n${spec}${o.specTail ?? ''}`);
    const node = await startOrchNode({ ORCH_CONFIG: file, ORCH_DATA_DIR: path.join(s.dir, name), DATABASE_URL: s.url, REDIS_URL: o.redisUrl, ...o.env });
    t.teardown(() => {
      node.child.kill('SIGCONT');
      node.child.kill('SIGKILL');
    });
    return node;
  };
}

/** A member's status as the controller's API reports it (undefined: not a member). */
export async function nodeStatus(c: Api, nodeId: string): Promise<string | undefined> {
  return (await api<{ nodes: { node_id: string; status: string }[] }>(c, 'GET', '/v1/cluster/nodes')).body.nodes.find((n) => n.node_id === nodeId)?.status;
}

/** Waits until every node of `nodeIds` has `status` on the controller. */
export async function allInStatus(c: Api, nodeIds: string[], status: string, timeoutMs: number, what: string): Promise<void> {
  await eventually(async () => ((await Promise.all(nodeIds.map((id) => nodeStatus(c, id)))).every((s) => s === status) ? true : undefined), timeoutMs, what);
}

/** Waits until every node of `nodeIds` is ACTIVE on the controller. */
export function allActive(c: Api, nodeIds: string[], timeoutMs: number, what: string): Promise<void> {
  return allInStatus(c, nodeIds, 'ACTIVE', timeoutMs, what);
}

/** An execution as the controller's API shows it. */
export interface ExecutionJson {
  status: string;
  reason: string | null;
  final_output: string | null;
  completed_at: string | null;
}

/** Waits until the execution has ended (completed, failed or cancelled); its API view then. */
export function executionEnd(c: Api, id: string, timeoutMs: number, what = `execution ${id} to finish`): Promise<ExecutionJson> {
  return eventually(async () => {
    const d = await api<ExecutionJson>(c, 'GET', `/v1/executions/${id}`);
    return d.body.status === 'pending' || d.body.status === 'running' ? undefined : d.body;
  }, timeoutMs, what);
}
