// The bootstrap inside a real sandbox (process isolation, bubblewrap) talking the dispatch-gateway protocol to a
// GatewayChannel over the per-execution unix socket: generate → dispatch → dispatch_result → final → generate →
// done. Checks exec semantics the seed fixes: args, cwd, env_additions, exit codes, tail-trimmed output with
// `truncated`, and the per-command timeout.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { GatewayRegistry, listenGatewaySocket } from '../../src/agents/execution/gateway-server.ts';
import type { DispatchMessage } from '../../src/agents/execution/gateway-channel.ts';
import { BOOTSTRAP_DIR, SANDBOX_BOOTSTRAP } from '../../src/agents/execution/sandbox.ts';
import { createRuntime } from '../../src/agents/runtime/select.ts';

function dispatch(over: Partial<DispatchMessage>): DispatchMessage {
  return {
    type: 'dispatch',
    dispatch_id: randomUUID(),
    action: 'exec',
    command: 'sh',
    args: [],
    cwd: '/workspace',
    env_additions: {},
    timeout_secs: 30,
    max_output_bytes: 524_288,
    ...over,
  };
}

test('bootstrap runs dispatches in the sandbox and exits when the gateway says done', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-boot-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const runDir = path.join(dir, 'run');
  const work = path.join(dir, 'ws');
  await mkdir(runDir);
  await mkdir(work);
  const executionId = randomUUID();
  const registry = new GatewayRegistry();
  const channel = registry.open(executionId);
  const gw = await listenGatewaySocket(registry, channel, path.join(runDir, 'gateway.sock'), silentLogger());
  t.teardown(() => gw.close());
  const runtime = createRuntime('process', { logger: silentLogger(), nodeId: 'n1' });
  const sb = await runtime.start({
    executionId,
    agentId: 'a1',
    command: ['node', SANDBOX_BOOTSTRAP],
    env: { ORCH_EXECUTION_ID: executionId, ORCH_AGENT_ID: 'a1', ORCH_ORCHESTRATOR_URL: 'unix:/orch/run/gateway.sock', FROM_MANIFEST: 'yes' },
    mounts: [
      { hostPath: BOOTSTRAP_DIR, sandboxPath: '/orch/bin', readOnly: true },
      { hostPath: runDir, sandboxPath: '/orch/run', readOnly: false },
      { hostPath: work, sandboxPath: '/workspace', readOnly: false },
    ],
    workdir: '/workspace',
    network: false,
    labels: {},
  });
  t.teardown(() => runtime.stop(sb.id));

  const gen = await channel.awaitGenerate(AbortSignal.timeout(60_000));
  t.is(gen.iteration_number, 1);
  t.is(gen.execution_id, executionId);

  const r1 = await channel.dispatch(
    dispatch({ command: 'sh', args: ['-c', 'echo "$FROM_MANIFEST $EXTRA $(pwd)"; echo oops >&2; exit 3'], env_additions: { EXTRA: 'added' } }),
  );
  t.is(r1.exit_code, 3);
  t.is(r1.stdout, 'yes added /workspace\n');
  t.is(r1.stderr, 'oops\n');
  t.false(r1.truncated);
  t.true(r1.duration_ms >= 0);

  // Output over max_output_bytes: tail-trimmed and flagged, not an error.
  const r2 = await channel.dispatch(dispatch({ command: 'sh', args: ['-c', 'i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done'], max_output_bytes: 100 }));
  t.is(r2.exit_code, 0);
  t.true(r2.truncated);
  t.true(Buffer.byteLength(r2.stdout) <= 100);
  t.true(r2.stdout.endsWith('line-1999\n'), 'the tail is kept');

  // The orchestrator's gateway variable is not passed on to commands.
  const r3 = await channel.dispatch(dispatch({ command: 'sh', args: ['-c', 'echo "[$ORCH_ORCHESTRATOR_URL]"'] }));
  t.is(r3.stdout, '[]\n');

  // A command past its timeout is killed.
  const started = Date.now();
  const r4 = await channel.dispatch(dispatch({ command: 'sleep', args: ['120'], timeout_secs: 1 }));
  t.not(r4.exit_code, 0);
  // Far under the command's 120 s: the 1 s timeout killed it (the margin is for a loaded machine).
  t.true(Date.now() - started < 30_000);

  // A command that does not exist: exit code -1 (bootstrap-level error), the reason in stderr.
  const r5 = await channel.dispatch(dispatch({ command: 'no-such-command-here' }));
  t.is(r5.exit_code, -1);
  t.regex(r5.stderr, /ENOENT/);

  await channel.final({ type: 'final', content: 'ok', tool_calls_executed: 5, conversation: [] });
  const gen2 = await channel.awaitGenerate(AbortSignal.timeout(60_000));
  t.is(gen2.iteration_number, 2, 'after final the bootstrap asks for the next iteration');
  registry.closeChannel(channel);
  t.is(await sb.exited, 0, 'done makes the bootstrap exit 0');
});

test('the gateway refuses malformed messages and other executions with clear errors', async (t) => {
  const registry = new GatewayRegistry();
  const ch = registry.open(randomUUID());
  t.deepEqual(await registry.handle({ type: 'generate' }), { status: 400, body: { error: 'execution_id is required' } });
  t.is((await registry.handle({ type: 'nope', execution_id: ch.executionId })).status, 400);
  t.is((await registry.handle({ type: 'generate', execution_id: randomUUID(), iteration_number: 1 })).status, 404);
  t.is((await registry.handle({ type: 'generate', execution_id: ch.executionId, iteration_number: 1 }, registry.open(randomUUID()))).status, 404);
});
