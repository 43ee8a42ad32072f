// cmd.run over SEAL reaches the caller's sandbox through the node's SandboxCommands registry: a real process
// sandbox (bubblewrap when installed) started by the process runtime, its exec registered as the execution's
// runner; SealService on a real PGlite database. Also: unregistered → NoSandbox; the execution owned by another
// node → SandboxOnOtherNode; the ceiling → ExecTimeoutCeilingExceeded.
import test from 'ava';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { ProcessRuntime } from '../../src/agents/runtime/process.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { buildEnvelope } from '../../src/seal/client.ts';
import { SandboxCommands } from '../../src/seal/sandbox-commands.ts';
import { cmdTools } from '../../src/tools/builtin/cmd.ts';
import type { ToolCatalog, ToolOutcome } from '../../src/tools/types.ts';
import { fixture, type Fixture } from './harness.ts';

/** The real cmd.run definition (policy inside its handler); only the allow list is bypassed. */
function cmdCatalog(): ToolCatalog {
  const defs = cmdTools({ max_output_bytes: 64, timeout_ceiling_secs: 1 });
  return {
    list: () => [],
    get: (n) => defs.find((d) => d.name === n),
    async call(ctx, name, args): Promise<ToolOutcome> {
      const def = defs.find((d) => d.name === name);
      if (!def) return { ok: false, error: { error: 'ToolNotFound', message: name } };
      return def.handler(ctx, args);
    },
  };
}

const registry = new SandboxCommands();
const runtime = new ProcessRuntime({ logger: silentLogger() });
let f: Fixture;
let sandboxId: string;

test.before(async () => {
  f = await fixture({ catalog: cmdCatalog(), tools: ['cmd.run'], deps: { sandboxCommands: registry, nodeId: 'nobody' } });
  const ws = path.join(f.dir, 'ws');
  await mkdir(ws, { recursive: true });
  const h = await runtime.start({
    executionId: f.executionId,
    agentId: f.agentId,
    command: ['sleep', '120'],
    env: { ORCH_EXECUTION_ID: f.executionId },
    mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }],
    workdir: '/workspace',
    network: false,
    labels: {},
  });
  sandboxId = h.id;
});
test.after.always(async () => {
  await runtime.stop(sandboxId).catch(() => undefined);
  await f?.close();
});

const call = (args: Record<string, unknown>) =>
  f.seal.invoke(buildEnvelope('cmd.run', args, { securityToken: f.token, privateKey: f.keys.privateKey }));

function parse(res: Awaited<ReturnType<typeof call>>): { isError: boolean; value: Record<string, unknown> } {
  const body = res.body;
  if (!('result' in body)) throw new Error(JSON.stringify(body));
  return { isError: body.result.isError, value: JSON.parse(body.result.content[0]?.text ?? '{}') as Record<string, unknown> };
}

test.serial('no registered sandbox → NoSandbox tool error', async (t) => {
  const r = parse(await call({ command: 'echo', args: ['hi'] }));
  t.true(r.isError);
  t.is(r.value.error, 'NoSandbox');
});

test.serial('registered: the command runs in the sandbox (its env, its /workspace); output over the ceiling is tail-trimmed', async (t) => {
  const unregister = registry.register(f.executionId, (req) => runtime.exec(sandboxId, req));
  t.teardown(unregister);
  const r = parse(await call({ command: 'printenv', args: ['ORCH_EXECUTION_ID'] }));
  t.false(r.isError, JSON.stringify(r.value));
  t.is(String(r.value.stdout).trim(), f.executionId);
  t.is(r.value.exit_code, 0);
  const pwd = parse(await call({ command: 'pwd' }));
  t.is(String(pwd.value.stdout).trim(), runtime.usesBwrap() ? '/workspace' : path.join(f.dir, 'ws'));
  const long = parse(await call({ command: 'seq', args: ['1', '1000'] }));
  t.true(long.value.truncated);
  t.true(String(long.value.stdout).endsWith('1000\n'));
  t.true(Buffer.byteLength(String(long.value.stdout)) <= 64);
});

test.serial('a command past timeout_ceiling_secs → ExecTimeoutCeilingExceeded', async (t) => {
  const unregister = registry.register(f.executionId, (req) => runtime.exec(sandboxId, req));
  t.teardown(unregister);
  const started = Date.now();
  const r = parse(await call({ command: 'sleep', args: ['600'] }));
  t.true(r.isError);
  t.is(r.value.error, 'ExecTimeoutCeilingExceeded');
  // Far under the command's 600 s: the 1 s ceiling killed it (the margin is for a loaded machine).
  t.true(Date.now() - started < 60_000);
});

test.serial('unregister removes only its own runner', async (t) => {
  const first = registry.register(f.executionId, async () => ({ exit_code: 0, stdout: 'old', stderr: '', duration_ms: 0, truncated: false, timed_out: false }));
  const second = registry.register(f.executionId, (req) => runtime.exec(sandboxId, req));
  first();
  t.truthy(registry.get(f.executionId));
  second();
  t.is(registry.get(f.executionId), undefined);
});

test.serial('the execution owned by another node → SandboxOnOtherNode naming it', async (t) => {
  await f.db.query(`UPDATE executions SET owner_node = 'node-b' WHERE id = $1`, [f.executionId]);
  t.teardown(() => f.db.query(`UPDATE executions SET owner_node = 'nobody' WHERE id = $1`, [f.executionId]));
  const r = parse(await call({ command: 'echo', args: ['hi'] }));
  t.true(r.isError);
  t.is(r.value.error, 'SandboxOnOtherNode');
  t.regex(String(r.value.message), /node-b/);
});
