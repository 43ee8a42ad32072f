// Fixtures of the FSAL tests: a fresh PostgreSQL database with the migrations, a VolumeService on a temp data dir,
// an in-process bus, the FsalService behind the real runtime gRPC server with bearer auth (JWTs of a test identity
// provider), and helpers that make executions, volumes and grants, and call any FsalService method as a client.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import { credentials, Metadata, type Client, type MethodDefinition } from '@grpc/grpc-js';
import { insertExecution } from '../../src/agents/execution/repo.ts';
import type { AgentManifest } from '../../src/agents/manifest/types.ts';
import { createJwtAuthenticator } from '../../src/auth/jwt-authenticator.ts';
import { MemoryBus } from '../../src/bus/memory.ts';
import { grantVolume, type AccessMode } from '../../src/fsal/grants.ts';
import { FsalService } from '../../src/fsal/service.ts';
import { fsalHandlers } from '../../src/gateway/grpc/fsal-handlers.ts';
import { fsalExtensionHandlers } from '../../src/gateway/grpc/fsal-extension.ts';
import { FLOW_CONTROL_WINDOW } from '../../src/gateway/grpc/server-options.ts';
import { createRuntimeServer } from '../../src/gateway/grpc/runtime-server.ts';
import { startGrpcServer, type RunningGrpcServer } from '../../src/gateway/grpc/start.ts';
import { FsalServiceClient } from '../../src/gen/orch/fsal/v1/fsal.js';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { openDb } from '../../src/storage/open.ts';
import { VolumeService } from '../../src/volumes/service.ts';
import { call, type CallOutcome } from '../grpc/helpers.ts';
import { makeTestIdp, type TestIdp } from '../support/jwks.ts';
import { createTestDatabase, type TestDatabase } from '../support/pg.ts';

export const TENANT = 'acme';

/** A migrated throwaway PostgreSQL database opened on one pooled connection, with a data dir; both gone at teardown. */
export async function onePgConnection(t: ExecutionContext, prefix: string): Promise<{ db: Db; dataDir: string }> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), prefix));
  const tdb = await createTestDatabase({ migrated: true });
  const db = await openDb({ url: tdb.url, dataDir, poolSize: 1 }, silentLogger());
  t.teardown(async () => {
    await db.close();
    await tdb.drop();
    await rm(dataDir, { recursive: true, force: true });
  });
  return { db, dataDir };
}
export const SQUASH = { uid: 4242, gid: 4343 };

export function agentManifest(filesystem: { read: string[]; write: string[] } = { read: [], write: [] }): AgentManifest {
  return {
    apiVersion: 'orch.dev/v1',
    kind: 'Agent',
    metadata: { name: 'fsal-agent', version: '1.0.0' },
    spec: {
      runtime: { language: 'node', version: '20', image_pull_policy: 'IfNotPresent', isolation: 'process', model: 'default' },
      task: { instruction: 'x' },
      execution: { mode: 'iterative', max_iterations: 1, llm_timeout_seconds: 10, iteration_timeout: 10, validation: [] },
      security: { network: { mode: 'none', allowlist: [] }, filesystem, resources: { timeout: 120 } },
      volumes: [],
      tools: [],
      env: {},
    },
  };
}

export interface FsalFixture {
  db: Db;
  dataDir: string;
  volumes: VolumeService;
  bus: MemoryBus;
  fsal: FsalService;
  address: string;
  client: Client;
  idp: TestIdp;
  /** A bearer token of a user of `tenant`. */
  token(tenant?: string): Promise<string>;
  /** A running execution of `tenant` with the given filesystem policy. */
  execution(o?: { tenant?: string; filesystem?: { read: string[]; write: string[] }; status?: string }): Promise<string>;
  /** A volume of `tenant`; `owner` makes it the execution's own, `grant` grants it with a mode and mount path. */
  volume(o?: { tenant?: string; limit?: number; owner?: string }): Promise<string>;
  grant(executionId: string, volumeId: string, mode?: AccessMode, mountPath?: string, tenant?: string): Promise<void>;
  /** Calls an FsalService method as a user of `tenant`. */
  rpc<Req, Res>(method: MethodDefinition<Req, Res>, request: Req, tenant?: string): Promise<CallOutcome<Res>>;
  close(): Promise<void>;
}

/** `writeStream: false` leaves FsalExtensionService out (UNIMPLEMENTED), as an older node serves it. */
export async function fsalFixture(o: { writeStream?: boolean } = {}): Promise<FsalFixture> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'orch-fsal-'));
  const tdb: TestDatabase = await createTestDatabase({ migrated: true });
  const db = await openDb({ url: tdb.url, dataDir, poolSize: 20 }, silentLogger());
  const volumes = new VolumeService({ db, dataDir, nodeId: 'node-fsal', logger: silentLogger(), quotaChunkBytes: 8 * 1024 * 1024 });
  const bus = new MemoryBus();
  const fsal = new FsalService({ db, volumes, bus, logger: silentLogger(), squash: SQUASH });
  const idp = await makeTestIdp();
  const authenticator = createJwtAuthenticator({ jwks: idp.jwks, issuer: idp.issuer, audience: idp.audience });
  const server = createRuntimeServer({ fsal: fsalHandlers(fsal, silentLogger()), ...(o.writeStream === false ? {} : { fsalExtension: fsalExtensionHandlers(fsal, silentLogger()) }), auth: { enabled: true, authenticator }, logger: silentLogger() });
  const running: RunningGrpcServer = await startGrpcServer(server, '127.0.0.1', 0);
  const address = `127.0.0.1:${running.port}`;
  const client = new FsalServiceClient(address, credentials.createInsecure(), {
    'grpc-node.flow_control_window': FLOW_CONTROL_WINDOW,
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
  });
  const tokens = new Map<string, string>();
  const token = async (tenant = TENANT): Promise<string> => {
    let t = tokens.get(tenant);
    if (!t) {
      t = await idp.sign({ sub: `user-${tenant}`, tenant_id: tenant, preferred_username: `user-${tenant}` });
      tokens.set(tenant, t);
    }
    return t;
  };
  return {
    db,
    dataDir,
    volumes,
    bus,
    fsal,
    address,
    client,
    idp,
    token,
    async execution(o = {}) {
      const id = randomUUID();
      await insertExecution(db, {
        id,
        tenantId: o.tenant ?? TENANT,
        agentId: randomUUID(),
        agentName: 'fsal-agent',
        agentVersion: '1.0.0',
        manifest: agentManifest(o.filesystem),
        input: 'x',
        ownerNode: 'node-fsal',
        leaseMs: 60_000,
      });
      await db.query('UPDATE executions SET status = $2 WHERE id = $1', [id, o.status ?? 'running']);
      return id;
    },
    async volume(o = {}) {
      const v = await volumes.create({
        tenantId: o.tenant ?? TENANT,
        ownerSubject: 'user',
        label: 'fsal-test',
        sizeLimitBytes: o.limit ?? 10 * 1024 * 1024,
        ...(o.owner ? { owner: { kind: 'execution', ref: o.owner } } : {}),
      });
      return v.id;
    },
    async grant(executionId, volumeId, mode = 'read-write', mountPath = '/workspace', tenant = TENANT) {
      await grantVolume(db, { execution_id: executionId, volume_id: volumeId, tenant_id: tenant, access_mode: mode, mount_path: mountPath });
    },
    async rpc(method, request, tenant = TENANT) {
      const md = new Metadata();
      md.set('authorization', `Bearer ${await token(tenant)}`);
      return call(client, method, request, md);
    },
    async close() {
      client.close();
      await running.close();
      await db.close();
      await tdb.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Calls `fn` until it answers `code` (the FsalService reuses an authorization for accessCacheMs, 1 s: an ended
 * execution loses access within that time, not at the same instant). Answers the last outcome.
 */
export async function eventually<T extends { code: number }>(fn: () => Promise<T>, code: number, withinMs = 5000): Promise<T & { afterMs: number }> {
  const t0 = Date.now();
  for (;;) {
    const r = await fn();
    if (r.code === code || Date.now() - t0 > withinMs) return { ...r, afterMs: Date.now() - t0 };
    await new Promise((res) => setTimeout(res, 50));
  }
}
