// No file, an empty file and a minimal file all give the documented `npm start` defaults (docs/CONFIG.md).
import test from 'ava';
import path from 'node:path';
import { loadNodeConfig } from '../../src/config/load.ts';
import type { NodeConfig } from '../../src/config/types.ts';

const cwd = '/srv/orch';

function expectedDefaults(): NodeConfig {
  return {
    name: 'node-box1',
    node: { id: 'node-box1', role: 'hybrid', tags: [] },
    http: { bind: '127.0.0.1', port: 8080 },
    grpc: { port: 50051 },
    grpc_auth: { enabled: true, exempt_methods: ['/orch.v1.InnerLoop/Generate'] },
    cluster: { cluster_grpc_port: 50056, heartbeat_interval_seconds: 30, missed_heartbeats: 3 },
    database: {},
    redis: {},
    llm_providers: [],
    runtime: { default_isolation: 'process', sandbox_uid: 65534, sandbox_gid: 65534, system_state_network: false, unsandboxed_process: false },
    builtin_dispatchers: [],
    mcp_servers: [],
    billing: {},
    stimuli: { routes: [], classification_threshold: 0.7 },
    dataDir: path.join(cwd, '.orch/data'),
    log: { level: 'info' },
    admission: { max_concurrent_starts: 4, max_queued: 2000, max_queued_per_tenant: 1000, retry_after_seconds: 2 },
    pricing: { currency: 'USD', models: [] },
    rate_limits: {
      enabled: true,
      per_ip: { max: 60_000, window_seconds: 60 },
      per_tenant: { max: 60_000, window_seconds: 60 },
      per_webhook_source: { max: 60_000, window_seconds: 60 },
      exempt_ips: ['127.0.0.1', '::1', '::ffff:127.0.0.1'],
      exempt_tenants: ['orch-system'],
    },
  };
}

test('no file at all gives the npm start defaults', (t) => {
  const config = loadNodeConfig({ env: {}, cwd, hostname: 'Box1' });
  t.deepEqual(config, expectedDefaults());
  t.is(config.auth, undefined, 'no auth section: dev identity mode');
});

test('an empty or comments-only file is the same as no file', (t) => {
  t.deepEqual(loadNodeConfig({ text: '', env: {}, cwd, hostname: 'box1' }), expectedDefaults());
  t.deepEqual(loadNodeConfig({ text: '# nothing here\n', env: {}, cwd, hostname: 'box1' }), expectedDefaults());
});

test('a minimal file takes defaults for everything it leaves out; metadata.name defaults to the node id', (t) => {
  const config = loadNodeConfig({ text: 'apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n  node: { id: n1 }\n', env: {}, cwd, hostname: 'box1' });
  t.deepEqual(config, { ...expectedDefaults(), name: 'n1', node: { id: 'n1', role: 'hybrid', tags: [] } });
});

test('the default node id is node-<hostname>, reduced to the node-id alphabet', (t) => {
  t.is(loadNodeConfig({ env: {}, cwd, hostname: 'My Laptop.local' }).node.id, 'node-my-laptop.local');
});

test('ORCH_NODE_ID and ORCH_DATA_DIR replace the defaults; a relative data dir is absolute afterwards', (t) => {
  const config = loadNodeConfig({ env: { ORCH_NODE_ID: 'edge-7', ORCH_DATA_DIR: 'var/data' }, cwd, hostname: 'box1' });
  t.is(config.node.id, 'edge-7');
  t.is(config.name, 'edge-7');
  t.is(config.dataDir, path.join(cwd, 'var/data'));
});

test('grpc_auth given without exempt_methods keeps the default exemption; an explicit empty list is kept', (t) => {
  const head = 'apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n';
  t.deepEqual(loadNodeConfig({ text: `${head}  grpc_auth: { enabled: false }\n`, env: {} }).grpc_auth, {
    enabled: false,
    exempt_methods: ['/orch.v1.InnerLoop/Generate'],
  });
  t.deepEqual(loadNodeConfig({ text: `${head}  grpc_auth: { exempt_methods: [] }\n`, env: {} }).grpc_auth, { enabled: true, exempt_methods: [] });
});

test('port 0 (ephemeral) is accepted', (t) => {
  const config = loadNodeConfig({ text: 'apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n  http: { port: 0 }\n  grpc: { port: 0 }\n', env: {} });
  t.is(config.http.port, 0);
  t.is(config.grpc.port, 0);
});
