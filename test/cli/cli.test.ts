// The `orch` command as a user runs it: the zero-install start, tokens, node ls, and failures as one line.
import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runOrch, startOrchNode } from '../support/node-process.ts';

async function tempDir(t: import('ava').ExecutionContext): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-cli-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

// No DATABASE_URL, no REDIS_URL, no DOCKER_HOST: the default start on PGlite and the in-process bus.
const NO_SERVICES = { DATABASE_URL: undefined, REDIS_URL: undefined, DOCKER_HOST: undefined, ORCH_CONFIG: undefined };

test('orch up with nothing installed answers /health, prints addresses and a dev token that works', async (t) => {
  const dir = await tempDir(t);
  const started = Date.now();
  // Start-up time is measured in bench/ (npm run bench -- startup), not here: this machine is shared with other tests.
  const node = await startOrchNode({ ...NO_SERVICES, ORCH_DATA_DIR: dir });
  t.teardown(() => node.child.kill('SIGKILL'));
  const health = await fetch(`${node.banner.http}/health`);
  t.is(health.status, 200);
  t.deepEqual(await health.json(), { status: 'ok' });
  t.log(`first /health after ${Date.now() - started} ms`);
  t.is(node.banner.database, 'pglite');
  t.is(node.banner.bus, 'memory');
  t.regex(node.banner.grpc, /^127\.0\.0\.1:\d+$/);
  t.truthy(node.banner.cluster);
  const token = node.banner.dev_token;
  t.truthy(token);
  const nodes = await fetch(`${node.banner.http}/v1/cluster/nodes`, { headers: { authorization: `Bearer ${token}` } });
  t.is(nodes.status, 200);
  t.is(((await nodes.json()) as { nodes: unknown[] }).nodes.length, 1);

  // orch token signs with the same data dir's dev identity; orch node ls uses it.
  const minted = await runOrch(['token', '--role', 'operator'], { ...NO_SERVICES, ORCH_DATA_DIR: dir });
  t.is(minted.code, 0, minted.stderr);
  const ls = await runOrch(['--json', 'node', 'ls', '--url', node.banner.http, '--token', minted.stdout.trim()], NO_SERVICES);
  t.is(ls.code, 0, ls.stderr);
  const listed = JSON.parse(ls.stdout) as { nodes: { node_id: string; status: string }[] };
  t.is(listed.nodes[0]?.node_id, node.banner.node_id);
  const table = await runOrch(['node', 'ls', '--url', node.banner.http, '--token', minted.stdout.trim()], NO_SERVICES);
  t.regex(table.stdout, /^NODE_ID\s+ROLE\s+STATUS/m);

  // A token from another data dir's dev identity is refused.
  const otherDir = await tempDir(t);
  const foreign = await runOrch(['token'], { ...NO_SERVICES, ORCH_DATA_DIR: otherDir });
  const refused = await runOrch(['node', 'ls', '--url', node.banner.http, '--token', foreign.stdout.trim()], NO_SERVICES);
  t.is(refused.code, 1);
  t.regex(refused.stderr, /^orch: .*401.*\n$/);
  t.is(refused.stderr.split('\n').length, 2, 'one line');
});

test('a broken config file exits with code 2 and one line naming the key', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'bad.yaml');
  await writeFile(file, 'apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: x }\nspec:\n  http: { port: "eighty" }\n');
  const res = await runOrch(['up', '--config', file], { ...NO_SERVICES, ORCH_DATA_DIR: dir });
  t.is(res.code, 2);
  t.regex(res.stderr, /spec\.http\.port/);
  t.is(res.stderr.trim().split('\n').length, 1, `one line: ${res.stderr}`);

  await writeFile(file, 'apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: x }\nspec:\n  htp: { port: 80 }\n');
  const unknown = await runOrch(['up', '--config', file], { ...NO_SERVICES, ORCH_DATA_DIR: dir });
  t.is(unknown.code, 2);
  t.regex(unknown.stderr, /spec\.htp/);
});

test('orch node ls against a dead address fails with one line and a non-zero code', async (t) => {
  const res = await runOrch(['node', 'ls', '--url', 'http://127.0.0.1:9', '--token', 'x'], NO_SERVICES);
  t.is(res.code, 1);
  t.regex(res.stderr, /^orch: cannot reach http:\/\/127\.0\.0\.1:9/);
});

test('orch --help lists the commands', async (t) => {
  const res = await runOrch(['--help'], NO_SERVICES);
  t.is(res.code, 0);
  for (const cmd of ['up', 'token', 'node', 'agent', 'execution', 'workflow', 'approvals']) t.regex(res.stdout, new RegExp(`\\b${cmd}\\b`));
});
