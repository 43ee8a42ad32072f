// Shared fixtures of the tool catalog tests: a node config, principals, contexts and a call context on a temp volume.
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import type { Principal } from '../../src/auth/principal.ts';
import type { NodeConfig } from '../../src/config/types.ts';
import type { SecurityContext, ToolCallContext } from '../../src/tools/types.ts';

export function nodeConfig(over: Partial<NodeConfig> = {}): NodeConfig {
  return {
    name: 'node-t1',
    node: { id: 'node-t1', role: 'hybrid', tags: [] },
    http: { bind: '127.0.0.1', port: 8080 },
    grpc: { port: 50051 },
    grpc_auth: { enabled: true, exempt_methods: [] },
    cluster: { cluster_grpc_port: 50056, heartbeat_interval_seconds: 30, missed_heartbeats: 3 },
    database: {},
    redis: {},
    llm_providers: [],
    runtime: { default_isolation: 'process', sandbox_uid: 65534, sandbox_gid: 65534, system_state_network: false, unsandboxed_process: false },
    builtin_dispatchers: [],
    mcp_servers: [],
    billing: {},
    dataDir: '/tmp/orch-test-data',
    log: { level: 'silent' },
    ...over,
  };
}

export function principal(roles: Principal['roles'] = [], tenant = 'acme', subject = 'alice'): Principal {
  return { subject, roles, tenantId: tenant, homeTenantId: tenant, isServiceAccount: false, delegated: false };
}

export function context(over: Partial<SecurityContext> = {}): SecurityContext {
  return { name: 'test', allow: [], deny: [], filesystem: { read: [], write: [] }, network: { mode: 'allow', allowlist: [] }, ...over };
}

export function callContext(ctx: SecurityContext, over: Partial<ToolCallContext> = {}): ToolCallContext {
  const p = principal();
  return { origin: 'seal', principal: p, tenantId: p.tenantId, context: ctx, ...over };
}

/** A temp directory mounted at /workspace; removed after the test. */
export async function volume(t: ExecutionContext, readOnly = false): Promise<{ host: string; mounts: ToolCallContext['mounts'] }> {
  const host = await realpath(await mkdtemp(path.join(os.tmpdir(), 'orch-tools-')));
  t.teardown(() => rm(host, { recursive: true, force: true }));
  return { host, mounts: [{ sandboxPath: '/workspace', hostPath: host, readOnly }] };
}
