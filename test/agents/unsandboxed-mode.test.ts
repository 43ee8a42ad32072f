// The only way to run sandboxes as plain host processes is the operator setting runtime.unsandboxed_process: off
// by default, a boolean (nothing else is accepted), and a node that has it on says so loudly at start.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { loadNodeConfig } from '../../src/config/load.ts';
import { processRuntimeOptions } from '../../src/agents/runtime/tenant-sandbox.ts';
import { eventually } from '../support/node-process.ts';
import { nodeStarter, scratch } from '../cluster/processes.ts';

const config = (runtime: string) =>
  loadNodeConfig({ text: `apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: n }\nspec:\n  runtime: ${runtime}\n`, env: {} });

test('off by default: process isolation requires bubblewrap; only `true` turns it off; bwrap_path and the sandbox uid are read', (t) => {
  const dflt = config('{ default_isolation: process }');
  t.false(dflt.runtime.unsandboxed_process);
  t.deepEqual(processRuntimeOptions(dflt), { sandbox: 'bwrap' });
  t.is(dflt.runtime.sandbox_uid, 65534);
  t.false(dflt.runtime.system_state_network);
  const on = config('{ unsandboxed_process: true, bwrap_path: /opt/bwrap, sandbox_uid: 1500, sandbox_gid: 1501 }');
  t.deepEqual(processRuntimeOptions(on), { sandbox: 'none', bwrapPath: '/opt/bwrap' });
  t.deepEqual([on.runtime.sandbox_uid, on.runtime.sandbox_gid], [1500, 1501]);
  t.throws(() => config('{ unsandboxed_process: "yes" }'), { message: /unsandboxed_process/ });
  t.throws(() => config('{ sandbox_uid: 0 }'), { message: /sandbox_uid/ });
});

test('a node with runtime.unsandboxed_process logs a loud warning at start', async (t) => {
  const s = await scratch(t, 'orch-unsandboxed-');
  const name = `loud-${randomBytes(3).toString('hex')}`;
  const node = await nodeStarter(t, s, { env: { ORCH_LOG_LEVEL: 'warn' } })(name, `  node: { id: ${name} }
  http: { bind: 127.0.0.1, port: 0 }
  grpc: { port: 0 }
  cluster: { cluster_grpc_port: 0 }
  runtime: { default_isolation: process, unsandboxed_process: true }
`);
  const line = await eventually(async () => node.stderr().split('\n').find((l) => l.includes('UNSANDBOXED')), 60_000, 'the warning');
  const entry = JSON.parse(line) as { level: number; msg: string; setting: string };
  t.true(entry.level >= 40, 'warn or above');
  t.is(entry.setting, 'runtime.unsandboxed_process');
  t.regex(entry.msg, /PLAIN PROCESSES ON THIS HOST/);
});
