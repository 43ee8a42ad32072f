// Every way a config can be wrong ends in one ConfigError line that names the key (or variable) at fault.
import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Errors } from '../../src/errors/catalog.ts';
import { ConfigError } from '../../src/config/errors.ts';
import { loadNodeConfig, type LoadNodeConfigOptions } from '../../src/config/load.ts';

const HEAD = 'apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: x }\n';

function fail(t: import('ava').ExecutionContext, options: Partial<LoadNodeConfigOptions> & { text?: string }): ConfigError {
  const err = t.throws(() => loadNodeConfig({ env: {}, ...options }), { instanceOf: ConfigError });
  if (!err) throw new Error('unreachable');
  t.is(err.spec, Errors.CONFIG_INVALID);
  t.false(err.message.includes('\n'), `one line: ${err.message}`);
  return err as ConfigError;
}

test('an unknown key is named with its dotted path', (t) => {
  const err = fail(t, { text: `${HEAD}spec:\n  htp: { port: 80 }\n` });
  t.is(err.message, 'config error: spec.htp: unknown key');
  t.is(err.key, 'spec.htp');
  t.is(fail(t, { text: `${HEAD}spec:\n  http: { prot: 80 }\n` }).message, 'config error: spec.http.prot: unknown key');
  t.is(fail(t, { text: `${HEAD}extra: 1\n` }).message, 'config error: extra: unknown key');
});

test('a wrong type names the key and the expected type', (t) => {
  const err = fail(t, { text: `${HEAD}spec:\n  http: { port: "eighty" }\n` });
  t.is(err.message, 'config error: spec.http.port: must be integer');
  t.is(err.key, 'spec.http.port');
  t.is(fail(t, { text: `${HEAD}spec:\n  http: 8080\n` }).message, 'config error: spec.http: must be a mapping');
  t.is(fail(t, { text: `${HEAD}spec:\n  node: { tags: gpu }\n` }).message, 'config error: spec.node.tags: must be a list');
});

test('a bad enum value lists the allowed values', (t) => {
  t.is(fail(t, { text: `${HEAD}spec:\n  node: { role: boss }\n` }).message, 'config error: spec.node.role: must be one of hybrid, controller, worker');
  t.is(
    fail(t, { text: `${HEAD}spec:\n  runtime: { default_isolation: vm }\n` }).message,
    'config error: spec.runtime.default_isolation: must be one of process, docker',
  );
});

test('keys inside lists are named with their index', (t) => {
  const err = fail(t, { text: `${HEAD}spec:\n  llm_providers:\n    - { name: a, type: openai, models: [{ alias: x }] }\n` });
  t.is(err.message, 'config error: spec.llm_providers[0].models[0].model: is required');
});

test('out-of-range ports, wrong apiVersion or kind, a non-mapping document', (t) => {
  t.is(fail(t, { text: `${HEAD}spec:\n  grpc: { port: 70000 }\n` }).message, 'config error: spec.grpc.port: must be <= 65535');
  t.is(fail(t, { text: 'apiVersion: orch.dev/v2\nkind: NodeConfig\n' }).message, 'config error: apiVersion: must be "orch.dev/v1"');
  t.is(fail(t, { text: 'apiVersion: orch.dev/v1\nkind: Agent\n' }).message, 'config error: kind: must be "NodeConfig"');
  t.is(fail(t, { text: '- a\n- b\n' }).message, 'config error: (root): must be a mapping');
});

test('a pattern error says what is expected, and names the variable when the value came from one', (t) => {
  t.is(
    fail(t, { text: `${HEAD}spec:\n  database: { url: mysql://db }\n` }).message,
    'config error: spec.database.url: must be a postgres:// or postgresql:// URL',
  );
  t.is(
    fail(t, { text: `${HEAD}spec:\n  redis: { url: env:CACHE }\n`, env: { CACHE: 'memcached://x' } }).message,
    'config error: spec.redis.url: must be a redis:// or rediss:// URL (value from environment variable CACHE)',
  );
});

test('a required key whose env:NAME is unset names the key and the variable', (t) => {
  const err = fail(t, { text: `${HEAD}spec:\n  llm_providers:\n    - { name: env:PROVIDER_NAME, type: openai, models: [] }\n` });
  t.is(err.message, 'config error: spec.llm_providers[0].name: required, but environment variable PROVIDER_NAME is not set');
  t.is(
    fail(t, { text: `${HEAD}spec:\n  auth: { jwks_url: env:ORCH_JWKS_URL }\n` }).message,
    'config error: spec.auth.jwks_url: required, but environment variable ORCH_JWKS_URL is not set',
  );
  t.is(
    fail(t, { text: `${HEAD}spec:\n  node: { tags: [env:ZONE] }\n` }).message,
    'config error: spec.node.tags[0]: environment variable ZONE is not set',
  );
});

test('cross-field rules: auth needs one JWKS source, names are unique, MCP transports need their address', (t) => {
  t.regex(fail(t, { text: `${HEAD}spec:\n  auth: { issuer: x }\n` }).message, /^config error: spec\.auth: must set jwks_url or jwks_file/);
  t.is(
    fail(t, { text: `${HEAD}spec:\n  auth: { jwks_url: https://a/certs, jwks_file: /k.json }\n` }).message,
    'config error: spec.auth: set only one of jwks_url and jwks_file',
  );
  t.is(
    fail(t, { text: `${HEAD}spec:\n  stimuli: { routes: [{ source: gh, workflow: a }, { source: gh, workflow: b }] }\n` }).message,
    'config error: spec.stimuli.routes[1].source: duplicate source "gh"',
  );
  t.is(fail(t, { text: `${HEAD}spec:\n  mcp_servers: [{ name: m, transport: http }]\n` }).message, 'config error: spec.mcp_servers[0].url: is required for the http transport');
});

test('a bad environment override names the variable', (t) => {
  const port = fail(t, { env: { ORCH_HTTP_PORT: 'abc' } });
  t.is(port.message, 'config error: ORCH_HTTP_PORT: must be an integer port 0..65535');
  t.is(port.key, 'ORCH_HTTP_PORT');
  t.is(fail(t, { env: { ORCH_GRPC_PORT: '65536' } }).key, 'ORCH_GRPC_PORT');
  t.is(fail(t, { env: { ORCH_ROLE: 'boss' } }).message, 'config error: ORCH_ROLE: must be one of hybrid, controller, worker');
  t.is(fail(t, { env: { ORCH_LOG_LEVEL: 'loud' } }).key, 'ORCH_LOG_LEVEL');
  t.is(fail(t, { env: { DATABASE_URL: 'sqlite:foo' } }).key, 'DATABASE_URL');
  t.is(fail(t, { env: { ORCH_NODE_ID: 'has space' } }).key, 'ORCH_NODE_ID');
});

test('a bad explicit override is named too', (t) => {
  t.is(fail(t, { overrides: { httpPort: -1 } }).key, 'override httpPort');
});

test('a YAML syntax error names the file, line and column', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-config-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'node.yaml');
  await writeFile(file, `${HEAD}spec:\n  http: { port: 8080\n  grpc: { port: 1 }\n`);
  const err = fail(t, { file });
  t.regex(err.message, new RegExp(`^config error: ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:\\d+:\\d+: invalid YAML: `));
  t.is(fail(t, { text: `${HEAD}spec:\n  http: { port: 1, port: 2 }\n` }).message, 'config error: <config>:5:20: invalid YAML: Map keys must be unique');
});

test('a missing file is one line naming it', (t) => {
  t.is(fail(t, { file: '/nonexistent/node.yaml' }).message, 'config error: cannot read /nonexistent/node.yaml: no such file');
});
