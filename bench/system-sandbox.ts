// What the sandbox costs a System state: one `echo hi` through ProcessRuntime.run (bubblewrap, dropped to uid
// 65534, the run's workspace bound) against the same command as a plain host `sh -c` (runSystemCommand, the
// operator's ExecuteSystemCommand path; System states used it before issue 14). Run as root:
//   npx tsx bench/system-sandbox.ts [--runs 40] [--network]
// --network measures a sandbox WITH network (its own network namespace joined to slirp4netns; before issue 14's
// network isolation: the host's network namespace).
// docs/BENCHMARKS.md records the figures.
import { chown, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ProcessRuntime } from '../src/agents/runtime/process.ts';
import type { SandboxSpec } from '../src/agents/runtime/types.ts';
import { runSystemCommand } from '../src/agents/system-command.ts';
import { silentLogger } from '../src/logging/logger.ts';

const i = process.argv.indexOf('--runs');
const RUNS = i >= 0 && Number(process.argv[i + 1]) > 0 ? Number(process.argv[i + 1]) : 40;
const NETWORK = process.argv.includes('--network');

function pct(samples: number[], p: number): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))]!;
}

async function main(): Promise<void> {
  const rt = new ProcessRuntime({ logger: silentLogger(), sandbox: 'bwrap' });
  const ws = await mkdtemp(path.join(os.tmpdir(), 'orch-bench-sbx-'));
  await chown(ws, 65534, 65534);
  const spec = (n: number): SandboxSpec => ({
    executionId: `bench-${n}`, agentId: 'bench', command: ['/bin/sh', '-c', 'echo hi'], env: {}, workdir: '/workspace', network: NETWORK, labels: {},
    mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }], user: { uid: 65534, gid: 65534 },
  });
  await rt.run(spec(0), { timeoutMs: 60_000, maxOutputBytes: 1024 }); // the bwrap probe
  const sandboxed: number[] = [];
  const host: number[] = [];
  for (let n = 0; n < RUNS; n++) {
    let t = performance.now();
    await rt.run(spec(n), { timeoutMs: 60_000, maxOutputBytes: 1024 });
    sandboxed.push(performance.now() - t);
    t = performance.now();
    await runSystemCommand({ command: 'echo hi' });
    host.push(performance.now() - t);
  }
  await rm(ws, { recursive: true, force: true });
  const f = (s: number[]) => `median ${pct(s, 0.5).toFixed(1)} ms, p95 ${pct(s, 0.95).toFixed(1)} ms`;
  process.stdout.write(`System state "echo hi", ${RUNS} runs, load ${os.loadavg()[0]!.toFixed(1)}:\n  sandboxed (bwrap, uid 65534, network ${NETWORK ? 'on' : 'off'}): ${f(sandboxed)}\n  host sh -c (before): ${f(host)}\n`);
}

await main();
