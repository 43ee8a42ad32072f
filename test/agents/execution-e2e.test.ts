// Acceptance of issue 3, end to end on a real `orch up` process: a scripted OpenAI-compatible server (real HTTP)
// drives an iterative execution — the model writes a file with fs.write and runs it with cmd.run inside the
// sandbox; the first validation (exit_code 0) fails, the second iteration fixes it. The event sequence seen over
// gRPC, SSE and the WebSocket feed is the same, and in seed order. Run with process isolation (bubblewrap) here;
// execution-docker.test.ts runs the same scenario in podman containers.
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runIterativeScenario, runCancelScenario, runResumeScenario, type ScenarioEnv } from './execution-scenarios.ts';

async function env(t: import('ava').ExecutionContext): Promise<ScenarioEnv> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-e2e-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return { dir, isolation: 'process' };
}

test('process isolation: iterative execution, identical events over gRPC, SSE and WebSocket', async (t) => {
  await runIterativeScenario(t, await env(t));
});

test('process isolation: cancel during a running command stops it within 2 s and ends cancelled', async (t) => {
  await runCancelScenario(t, await env(t));
});

test('process isolation: SIGKILL mid-execution resumes from the journal without re-asking the model', async (t) => {
  await runResumeScenario(t, await env(t));
});
