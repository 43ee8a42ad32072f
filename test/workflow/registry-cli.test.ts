// `orch workflow deploy|ls|versions|get|promote|rm` as a user runs them against a real node started by `orch up`
// (the default PGlite start): 201, 409 without --force, --force, an invalid manifest refused on one line naming
// its fields, list, versions, the served manifest, promote by an operator, delete.
import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runOrch, startOrchNode, type NodeProcess } from '../support/node-process.ts';

const NO_SERVICES = { DATABASE_URL: undefined, REDIS_URL: undefined, DOCKER_HOST: undefined, ORCH_CONFIG: undefined };

let dir: string;
let node: NodeProcess;
let user: string;
let ops: string;

const wf = (version: string, command = 'echo hi'): string => `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: cli-flow, version: ${version} }
spec:
  initial_state: run
  states:
    run: { kind: System, command: "${command}", transitions: [] }
`;

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'orch-wf-cli-'));
  node = await startOrchNode({ ...NO_SERVICES, ORCH_DATA_DIR: path.join(dir, 'data') });
  user = (await runOrch(['token', '--tenant', 'acme'], { ...NO_SERVICES, ORCH_DATA_DIR: path.join(dir, 'data') })).stdout.trim();
  ops = (await runOrch(['token', '--tenant', 'acme', '--role', 'operator'], { ...NO_SERVICES, ORCH_DATA_DIR: path.join(dir, 'data') })).stdout.trim();
});

test.after.always(async () => {
  node?.child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

const orch = (args: string[], token = user) => runOrch([...args, '--url', node.banner.http, '--token', token], NO_SERVICES);

test.serial('deploy, 409, --force, ls, versions, get, promote, rm', async (t) => {
  const file = path.join(dir, 'flow.yaml');
  await writeFile(file, wf('1.0.0'));
  const first = await orch(['workflow', 'deploy', '-f', file]);
  t.is(first.code, 0, first.stderr);
  t.regex(first.stdout, /^deployed cli-flow 1\.0\.0 in tenant scope \([0-9a-f-]{36}\)\n$/);
  const again = await orch(['workflow', 'deploy', '-f', file]);
  t.is(again.code, 1);
  t.regex(again.stderr, /409.*already exists/);
  t.is(again.stderr.split('\n').length, 2, 'one line');
  await writeFile(file, wf('1.0.0', 'echo forced'));
  t.is((await orch(['workflow', 'deploy', '-f', file, '--force'])).code, 0);
  await writeFile(file, wf('1.1.0'));
  t.is((await orch(['workflow', 'deploy', '-f', file])).code, 0);

  const ls = await orch(['workflow', 'ls']);
  t.is(ls.code, 0, ls.stderr);
  t.regex(ls.stdout, /^WORKFLOW_ID\s+NAME\s+VERSION\s+SCOPE/m);
  t.regex(ls.stdout, /cli-flow\s+1\.1\.0\s+tenant\s+2\s+run/);
  const json = await runOrch(['--json', 'workflow', 'ls', '--url', node.banner.http, '--token', user], NO_SERVICES);
  const listed = JSON.parse(json.stdout) as { workflows: { name: string; version: string }[] };
  t.deepEqual(listed.workflows.map((w) => [w.name, w.version]), [['cli-flow', '1.1.0']]);

  const versions = await orch(['workflow', 'versions', 'cli-flow']);
  t.regex(versions.stdout, /1\.1\.0\s+true[\s\S]*1\.0\.0\s+false/);
  const get = await orch(['workflow', 'get', 'cli-flow', '--version', '1.0.0']);
  t.regex(get.stdout, /echo forced/);

  t.is((await orch(['workflow', 'promote', 'cli-flow'])).code, 1, 'a plain user may not promote to global');
  const promoted = await orch(['workflow', 'promote', 'cli-flow'], ops);
  t.is(promoted.code, 0, promoted.stderr);
  t.regex(promoted.stdout, /promoted cli-flow 1\.1\.0, 1\.0\.0 to global scope/);
  t.regex((await orch(['workflow', 'ls', '--scope', 'global'])).stdout, /cli-flow\s+1\.1\.0\s+global/);
  t.is((await orch(['workflow', 'rm', 'cli-flow'], ops)).code, 0);
  t.regex((await orch(['workflow', 'ls'])).stdout, /^WORKFLOW_ID.*\n$/, 'only the header is left');
});

test.serial('an invalid manifest is refused on one line naming every field; nothing deploys', async (t) => {
  const file = path.join(dir, 'bad.yaml');
  await writeFile(file, wf('1.0.0').replace('initial_state: run', 'initial_state: nowhere\n  max_total_transitions: 500'));
  const res = await orch(['workflow', 'deploy', '-f', file]);
  t.is(res.code, 1);
  t.regex(res.stderr, /invalid workflow manifest .*spec\.initial_state: names no state.*spec\.max_total_transitions: must be at most 100/);
  t.is(res.stderr.split('\n').length, 2, 'one line');
  // The server refuses it the same way when the CLI is bypassed.
  const http = await fetch(`${node.banner.http}/v1/workflows`, { method: 'POST', headers: { authorization: `Bearer ${user}`, 'content-type': 'application/yaml' }, body: wf('1.0.0').replace('initial_state: run', 'initial_state: nowhere') });
  t.is(http.status, 422);
  t.regex((await orch(['workflow', 'ls'])).stdout, /^WORKFLOW_ID.*\n$/);
});
