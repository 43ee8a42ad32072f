// Tool-call round trips through the dispatch gateway, without an LLM: the loop hands a `dispatch` to the
// bootstrap in a real sandbox (process isolation, bubblewrap when present) over the per-execution unix socket and
// waits for its `dispatch_result`. Overhead = round trip − the command's own run time as the bootstrap measured it
// (spawn + exit of `true`), i.e. what orch adds per tool call.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../src/logging/logger.ts';
import { GatewayRegistry, listenGatewaySocket } from '../src/agents/execution/gateway-server.ts';
import { BOOTSTRAP_DIR, SANDBOX_BOOTSTRAP } from '../src/agents/execution/sandbox.ts';
import { createRuntime } from '../src/agents/runtime/select.ts';
import { percentile } from './stats.ts';

export interface GatewayFigures {
  calls: number;
  roundTripP50: number;
  roundTripP99: number;
  overheadP50: number;
  overheadP99: number;
  sandbox: string;
}

export async function benchGateway(calls: number): Promise<GatewayFigures> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-gw-'));
  const runDir = path.join(dir, 'run');
  await mkdir(runDir);
  const executionId = randomUUID();
  const registry = new GatewayRegistry();
  const channel = registry.open(executionId);
  const gw = await listenGatewaySocket(registry, channel, path.join(runDir, 'gateway.sock'), silentLogger());
  const runtime = createRuntime('process', { logger: silentLogger(), nodeId: 'bench' });
  const sb = await runtime.start({
    executionId,
    agentId: 'bench',
    command: ['node', SANDBOX_BOOTSTRAP],
    env: { ORCH_EXECUTION_ID: executionId, ORCH_ORCHESTRATOR_URL: 'unix:/orch/run/gateway.sock' },
    mounts: [
      { hostPath: BOOTSTRAP_DIR, sandboxPath: '/orch/bin', readOnly: true },
      { hostPath: runDir, sandboxPath: '/orch/run', readOnly: false },
    ],
    workdir: '/orch/run',
    network: false,
    labels: {},
  });
  try {
    await channel.awaitGenerate(AbortSignal.timeout(20_000));
    const rt: number[] = [];
    const over: number[] = [];
    for (let i = 0; i < calls + 50; i++) {
      const t0 = process.hrtime.bigint();
      const r = await channel.dispatch({
        type: 'dispatch',
        dispatch_id: `d${i}`,
        action: 'exec',
        command: 'true',
        args: [],
        cwd: '/orch/run',
        env_additions: {},
        timeout_secs: 10,
        max_output_bytes: 1024,
      });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (i < 50) continue; // warm-up
      rt.push(ms);
      over.push(Math.max(0, ms - r.duration_ms));
    }
    rt.sort((a, b) => a - b);
    over.sort((a, b) => a - b);
    return {
      calls,
      roundTripP50: percentile(rt, 50),
      roundTripP99: percentile(rt, 99),
      overheadP50: percentile(over, 50),
      overheadP99: percentile(over, 99),
      sandbox: (runtime as { usesBwrap?: () => boolean }).usesBwrap?.() ? 'bubblewrap' : 'plain process',
    };
  } finally {
    registry.closeChannel(channel);
    await runtime.stop(sb.id);
    await gw.close();
    await rm(dir, { recursive: true, force: true });
  }
}
