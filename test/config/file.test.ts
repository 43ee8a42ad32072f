// Loading real files: the full example, env:NAME references, relative paths, overrides in their order.
import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadNodeConfig } from '../../src/config/load.ts';

const EXAMPLE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../examples/node.yaml');

async function tempDir(t: import('ava').ExecutionContext): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-config-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('examples/node.yaml loads with every section', (t) => {
  const config = loadNodeConfig({
    file: EXAMPLE,
    env: { DATABASE_URL: 'postgres://orch@db:5432/orch', OPENAI_API_KEY: 'sk-test', SEARCH_API_KEY: 'search-key' },
  });
  t.is(config.name, 'node-a');
  t.deepEqual(config.node, { id: 'node-a', role: 'hybrid', tags: ['gpu'], grpc_address: '127.0.0.1:50051' });
  t.deepEqual(config.http, { bind: '127.0.0.1', port: 8080 });
  t.deepEqual(config.cluster, { cluster_grpc_port: 50056, controllers: ['127.0.0.1:50056'], heartbeat_interval_seconds: 30, missed_heartbeats: 3 });
  t.deepEqual(config.database, { url: 'postgres://orch@db:5432/orch' });
  t.deepEqual(config.redis, {}, 'REDIS_URL unset: in-process bus');
  t.deepEqual(config.auth, {
    issuer: 'https://idp.example/realms/orch',
    audience: 'orch',
    jwks_url: 'https://idp.example/realms/orch/protocol/openid-connect/certs',
  });
  t.deepEqual(config.llm_providers, [{ name: 'openai', type: 'openai', api_key: 'sk-test', models: [{ alias: 'default', model: 'gpt-4o-mini' }] }]);
  t.deepEqual(config.builtin_dispatchers[1], { name: 'web.search', config: { api_key: 'search-key' } });
  t.is(config.builtin_dispatchers[0]?.capabilities?.[0]?.tool, 'cmd.run');
  t.is(config.mcp_servers[0]?.transport, 'stdio');
  t.deepEqual(config.mcp_servers[0]?.env, {}, 'GITHUB_TOKEN unset: the key is left out');
  t.deepEqual(config.stimuli, {
    routes: [{ source: 'github', workflow: 'triage-issue', input_template: '{{payload.issue.title}}' }],
    router_agent: 'stimulus-router',
    classification_threshold: 0.7,
  });
  t.is(config.dataDir, '/var/lib/orch');
  t.is(config.billing.stripe_secret_key, undefined);
});

test('env:NAME values are read from the env given, converted where the schema wants numbers or booleans', (t) => {
  const text = `apiVersion: orch.dev/v1
kind: NodeConfig
spec:
  http: { port: env:PORT }
  grpc_auth: { enabled: env:GRPC_AUTH }
  cluster: { heartbeat_interval_seconds: env:HB }
  billing: { stripe_secret_key: env:STRIPE }
  node: { tags: [env:ZONE] }
`;
  const config = loadNodeConfig({ text, env: { PORT: '9090', GRPC_AUTH: 'false', HB: '2.5', STRIPE: 'sk_live_x', ZONE: 'eu-1' } });
  t.is(config.http.port, 9090);
  t.false(config.grpc_auth.enabled);
  t.is(config.cluster.heartbeat_interval_seconds, 2.5);
  t.is(config.billing.stripe_secret_key, 'sk_live_x');
  t.deepEqual(config.node.tags, ['eu-1']);
});

test('an unset env:NAME makes an optional key absent (database.url → PGlite), an empty one too', (t) => {
  const text = 'apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n  database: { url: env:DATABASE_URL }\n  http: { port: env:PORT }\n';
  const config = loadNodeConfig({ text, env: { PORT: '' } });
  t.deepEqual(config.database, {});
  t.is(config.http.port, 8080);
});

test('a quoted number written in the file is still a type error (only env values are converted)', (t) => {
  const err = t.throws(() => loadNodeConfig({ text: 'apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n  http: { port: "8080" }\n', env: {} }));
  t.is(err?.message, 'config error: spec.http.port: must be integer');
});

test('relative data_dir and jwks_file in a file are relative to the file; the default data dir to cwd', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'node.yaml');
  await writeFile(file, 'apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n  data_dir: data\n  auth: { jwks_file: keys/jwks.json }\n');
  const config = loadNodeConfig({ file, env: {}, cwd: '/elsewhere' });
  t.is(config.dataDir, path.join(dir, 'data'));
  t.is(config.auth?.jwks_file, path.join(dir, 'keys/jwks.json'));
  await writeFile(file, 'apiVersion: orch.dev/v1\nkind: NodeConfig\n');
  t.is(loadNodeConfig({ file, env: {}, cwd: '/elsewhere' }).dataDir, '/elsewhere/.orch/data');
});

test('environment overrides beat the file; explicit overrides beat both', async (t) => {
  const text = `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: from-file }
spec:
  node: { id: file-node, role: controller }
  http: { bind: 127.0.0.1, port: 8080 }
  database: { url: postgres://file/db }
  log: { level: warn }
`;
  const env = {
    DATABASE_URL: 'postgres://env/db',
    REDIS_URL: 'redis://127.0.0.1:6379',
    ORCH_NODE_ID: 'env-node',
    ORCH_ROLE: 'worker',
    ORCH_HTTP_BIND: '0.0.0.0',
    ORCH_HTTP_PORT: '0',
    ORCH_GRPC_PORT: '6000',
    ORCH_CLUSTER_GRPC_PORT: '6001',
    ORCH_LOG_LEVEL: 'debug',
    ORCH_DATA_DIR: '/data/orch',
    DOCKER_HOST: 'unix:///run/podman/podman.sock',
  };
  const config = loadNodeConfig({ text, env });
  t.is(config.name, 'from-file', 'metadata.name is not an override target');
  t.deepEqual(config.node, { id: 'env-node', role: 'worker', tags: [] });
  t.deepEqual(config.http, { bind: '0.0.0.0', port: 0 });
  t.is(config.grpc.port, 6000);
  t.is(config.cluster.cluster_grpc_port, 6001);
  t.is(config.database.url, 'postgres://env/db');
  t.is(config.redis.url, 'redis://127.0.0.1:6379');
  t.is(config.log.level, 'debug');
  t.is(config.dataDir, '/data/orch');
  t.is(config.runtime.docker_host, 'unix:///run/podman/podman.sock');

  const flagged = loadNodeConfig({ text, env, overrides: { role: 'hybrid', httpPort: 9999 } });
  t.is(flagged.node.role, 'hybrid');
  t.is(flagged.http.port, 9999);
});
