// The acceptance scenarios of execution-e2e.test.ts in real podman containers (Docker Engine API, DOCKER_HOST or
// the socket scripts/setup-podman.sh starts) on PostgreSQL. Never skipped: a missing engine fails.
import test from 'ava';
import Docker from 'dockerode';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { dockerConnection, DEFAULT_DOCKER_HOST } from '../../src/agents/runtime/docker.ts';
import { createTestDatabase } from '../support/pg.ts';
import { eventually } from '../support/node-process.ts';
import { runCancelScenario, runIterativeScenario, runResumeScenario, type ScenarioEnv } from './execution-scenarios.ts';

const dockerHost = process.env.DOCKER_HOST || DEFAULT_DOCKER_HOST;
const docker = new Docker(dockerConnection(dockerHost));

async function env(t: import('ava').ExecutionContext): Promise<ScenarioEnv> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-e2e-docker-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const db = await createTestDatabase({ migrated: true });
  t.teardown(() => db.drop());
  return { dir, isolation: 'docker', dockerHost, databaseUrl: db.url };
}

async function containersOf(executionId: string): Promise<string[]> {
  const list = await docker.listContainers({ all: true, filters: { label: [`orch.execution_id=${executionId}`] } });
  return list.map((c) => c.Id);
}

test('podman: iterative execution, identical events over gRPC, SSE and WebSocket', async (t) => {
  await runIterativeScenario(t, await env(t));
});

test('podman: cancel during a running command is cancelled within 2 s and its container removed', async (t) => {
  const { executionId } = await runCancelScenario(t, await env(t));
  // Killed at once (the scenario asserts the cancelled status within 2 s); the engine's removal of the stopped
  // container is asynchronous and, with the whole suite loading podman, has taken more than 5 s in CI.
  const left = await eventually(async () => ((await containersOf(executionId)).length === 0 ? true : undefined), 30_000, 'the container to be removed');
  t.true(left, 'no container left');
});

test('podman: SIGKILL mid-execution resumes in a fresh container on the same volume; no orphan survives', async (t) => {
  const e = await env(t);
  await runResumeScenario(t, e);
  // The resumed container is removed right after the terminal status is written; give the engine a moment.
  const mine = async (): Promise<string[]> => {
    const all = await docker.listContainers({ all: true, filters: { label: ['orch.execution_id'] } });
    return all.filter((c) => Object.values(c.Mounts ?? []).some((m) => (m.Source ?? '').startsWith(e.dir))).map((c) => c.Id);
  };
  await eventually(async () => ((await mine()).length === 0 ? true : undefined), 60_000, 'no container of this test left').catch(() => undefined);
  t.deepEqual(await mine(), [], 'the killed node\'s container was reaped and the resumed one removed');
});
