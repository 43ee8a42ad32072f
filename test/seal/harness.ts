// In-process SEAL fixtures: a real PGlite database with the migrations, one running execution row, a SealService
// over a small catalog (or the real one when given), and an attested client key.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { insertExecution } from '../../src/agents/execution/repo.ts';
import { attestationProof } from '../../src/agents/execution/sandbox.ts';
import type { AgentManifest } from '../../src/agents/manifest/types.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { generateKeyPair, publicKeyBase64, type SealKeyPair } from '../../src/seal/client.ts';
import { SealService, type SealDeps } from '../../src/seal/service.ts';
import { openDb } from '../../src/storage/open.ts';
import type { Db } from '../../src/storage/db.ts';
import type { ToolCatalog, ToolDefinition, ToolOutcome } from '../../src/tools/types.ts';

export function manifest(tools: string[] = ['fs.read', 'orch.tools.list']): AgentManifest {
  return {
    apiVersion: 'orch.dev/v1',
    kind: 'Agent',
    metadata: { name: 'sealer', version: '1.0.0' },
    spec: {
      runtime: { language: 'node', version: '20', image_pull_policy: 'IfNotPresent', isolation: 'process', model: 'default' },
      task: { instruction: 'x' },
      execution: { mode: 'iterative', max_iterations: 1, llm_timeout_seconds: 10, iteration_timeout: 10, validation: [] },
      security: { network: { mode: 'none', allowlist: [] }, filesystem: { read: [], write: [] }, resources: { timeout: 120 } },
      volumes: [],
      tools: tools.map((name) => ({ name })),
      env: {},
    },
  };
}

/** A catalog of two tools with the real catalog's contract: arguments, then policy (allow list), then handler. */
export function smallCatalog(): ToolCatalog {
  const defs: ToolDefinition[] = [
    {
      name: 'orch.tools.list',
      description: 'list',
      inputSchema: { type: 'object' },
      required: [],
      skipJudge: true,
      handler: async (ctx) => ({ ok: true, result: { tools: ctx.context.allow } }),
    },
    {
      name: 'fs.read',
      description: 'read',
      inputSchema: { type: 'object' },
      required: ['path'],
      skipJudge: true,
      handler: async (_ctx, args) =>
        String(args.path).includes('..')
          ? { ok: false, error: { error: 'PathOutsideBoundary', message: `${String(args.path)} is outside the workspace` } }
          : String(args.path) === 'missing'
            ? { ok: false, error: { error: 'FileNotFound', message: 'no such file' } }
            : { ok: true, result: { content: 'hello' } },
    },
    { name: 'cmd.run', description: 'run', inputSchema: { type: 'object' }, required: ['command'], skipJudge: false, handler: async () => ({ ok: true, result: {} }) },
  ];
  return {
    list: (c) => defs.filter((d) => c.allow.includes(d.name)).map((d) => ({ name: d.name, description: d.description, source: 'builtin', skip_judge: d.skipJudge })),
    get: (n) => defs.find((d) => d.name === n),
    async call(ctx, name, args): Promise<ToolOutcome> {
      const def = defs.find((d) => d.name === name);
      if (!def) return { ok: false, error: { error: 'ToolNotFound', message: `unknown tool ${name}` } };
      for (const f of def.required) {
        if (args[f] === undefined || args[f] === null) return { ok: false, error: { error: 'InvalidArguments', message: `Missing required argument ${f} for tool ${name}.` } };
      }
      if (!ctx.context.allow.includes(name)) return { ok: false, error: { error: 'ToolNotAllowed', message: `${name} is not allowed` } };
      return def.handler(ctx, args);
    },
  };
}

export interface Fixture {
  db: Db;
  dir: string;
  seal: SealService;
  executionId: string;
  agentId: string;
  containerId: string;
  keys: SealKeyPair;
  token: string;
  /** A second running execution of another agent; `containerId` is the proof its sandbox would send (id:secret). */
  newExecution(): Promise<{ executionId: string; agentId: string; containerId: string }>;
  setStatus(executionId: string, status: string): Promise<void>;
  close(): Promise<void>;
}

export async function fixture(o: { catalog?: ToolCatalog; deps?: Partial<SealDeps>; tools?: string[] } = {}): Promise<Fixture> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-seal-'));
  const db = await openDb({ dataDir: dir }, silentLogger());
  const newExecution = async () => {
    const executionId = randomUUID();
    const agentId = randomUUID();
    await insertExecution(db, {
      id: executionId,
      tenantId: 'orch-system',
      agentId,
      agentName: 'sealer',
      agentVersion: '1.0.0',
      manifest: manifest(o.tools),
      input: 'x',
      ownerNode: 'nobody',
      leaseMs: 1000,
    });
    // As the execution loop records a process sandbox: its id, and the hash of the secret handed into it.
    const proof = attestationProof(`process-${executionId}`);
    await db.query(`UPDATE executions SET status = 'running', container_id = $2, attestation_secret_sha256 = $3 WHERE id = $1`, [executionId, `process-${executionId}`, proof.sha256]);
    return { executionId, agentId, containerId: proof.containerId };
  };
  const first = await newExecution();
  const seal = new SealService({ db, dataDir: dir, catalog: o.catalog ?? smallCatalog(), logger: silentLogger(), ...o.deps });
  const keys = generateKeyPair();
  const att = await seal.attest({ agent_id: first.agentId, execution_id: first.executionId, container_id: first.containerId, public_key: publicKeyBase64(keys.publicKey) });
  return {
    db,
    dir,
    seal,
    ...first,
    keys,
    token: att.security_token,
    newExecution,
    setStatus: async (id, status) => {
      await db.query('UPDATE executions SET status = $2 WHERE id = $1', [id, status]);
    },
    close: async () => {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
