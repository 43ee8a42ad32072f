// README step 8: `orch up --config examples/dev-node.yaml` gives a usable dev node (issue 15 item 9). The file as
// written: ports other than the `npm start` defaults, dev identity on, data under the checkout's .orch, nothing fetched
// at start; and a real `orch up` on it (a temp data dir and ephemeral ports so tests run in parallel) that prints a
// token, answers /v1 with it, and lets `orch token --config` sign one that works too.
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadNodeConfig } from '../../src/config/load.ts';
import { DEFAULTS } from '../../src/config/defaults.ts';
import { runOrch, startOrchNode } from '../support/node-process.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DEV = path.join(ROOT, 'examples/dev-node.yaml');

test('examples/dev-node.yaml as written: its own ports, dev identity, data under ./.orch, no npx', (t) => {
  const config = loadNodeConfig({ file: DEV, env: {}, cwd: ROOT });
  t.is(config.auth, undefined, 'no auth section: dev identity mode');
  const defaults = new Set<number>([DEFAULTS.httpPort, DEFAULTS.grpcPort, DEFAULTS.clusterGrpcPort]);
  for (const port of [config.http.port, config.grpc.port, config.cluster.cluster_grpc_port]) t.false(defaults.has(port), `port ${port} is one npm start uses`);
  t.is(config.dataDir, path.join(ROOT, '.orch/dev-node'));
  t.not(config.dataDir, path.resolve(ROOT, DEFAULTS.dataDir), 'not the data dir of the npm start node');
  t.deepEqual(config.mcp_servers, [], 'no MCP server fetched from the network at start');
});

test('orch up --config examples/dev-node.yaml starts, prints a token, and /v1 answers 200 with it', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-dev-node-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const env = { ORCH_DATA_DIR: path.join(dir, 'data'), DATABASE_URL: undefined, REDIS_URL: undefined, ORCH_CONFIG: undefined };
  const node = await startOrchNode(env, ['--config', DEV]);
  t.teardown(() => node.kill('SIGKILL'));
  t.truthy(node.banner.dev_token, 'the banner carries a dev token');
  t.regex(node.banner.database, /pglite/);
  const whoami = await fetch(`${node.banner.http}/v1/whoami`, { headers: { authorization: `Bearer ${node.banner.dev_token}` } });
  t.is(whoami.status, 200, await whoami.clone().text());

  const minted = await runOrch(['token', '--config', DEV, '--role', 'operator'], env);
  t.is(minted.code, 0, minted.stderr);
  const agents = await fetch(`${node.banner.http}/v1/agents`, { headers: { authorization: `Bearer ${minted.stdout.trim()}` } });
  t.is(agents.status, 200, await agents.clone().text());
});
