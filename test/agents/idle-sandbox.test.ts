// Idle sandboxes of process isolation (issue 24): no resident process; every command runs through exec() in a fresh
// bubblewrap sandbox made from the execution's spec. Checked on the real runtime: a command sees the spec's
// environment and the attestation secret, its /workspace, no network interface but lo and no host file outside the
// binds; /tmp does not carry over from one command to the next (fresh namespaces each time); stop() kills a running
// command at once; an abort kills it; a host that cannot make sandboxes fails the start, never runs unsandboxed.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { ProcessRuntime } from '../../src/agents/runtime/process.ts';
import { SandboxUnavailableError, type SandboxSpec } from '../../src/agents/runtime/types.ts';

const rt = new ProcessRuntime({ logger: silentLogger(), nodeId: 'test-node', sandbox: 'bwrap' });

async function idleSpec(t: import('ava').ExecutionContext, over: Partial<SandboxSpec> = {}): Promise<SandboxSpec> {
  const ws = await mkdtemp(path.join(os.tmpdir(), 'orch-idle-'));
  t.teardown(() => rm(ws, { recursive: true, force: true }));
  return {
    executionId: `idle-${randomBytes(4).toString('hex')}`, agentId: 'agent-idle', command: [], idle: true,
    env: { ORCH_EXECUTION_ID: 'x', KEEP: 'me' }, secretEnv: { ORCH_SEAL_CONTAINER_ID: 'process-x:secret' },
    mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }], workdir: '/workspace', network: false, labels: {}, ...over,
  };
}

const sh = (script: string, timeout_secs = 60) => ({ command: 'sh', args: ['-c', script], cwd: '/workspace', timeout_secs, max_output_bytes: 65536 });

test('commands of an idle sandbox: its env and secret, its workspace, only lo, no host files; a fresh /tmp each time', async (t) => {
  const h = await rt.start(await idleSpec(t));
  t.teardown(() => rt.stop(h.id));
  t.is(h.id.startsWith('process-idle-'), true);
  const a = await rt.exec(h.id, sh("echo \"$KEEP $ORCH_SEAL_CONTAINER_ID\"; pwd; echo hi > /workspace/f; echo t > /tmp/t; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; test -e /etc/shadow && echo SHADOW; true"));
  t.is(a.exit_code, 0, a.stderr);
  t.is(a.stdout, 'me process-x:secret\n/workspace\nlo\n');
  const b = await rt.exec(h.id, sh('cat /workspace/f; cat /tmp/t 2>/dev/null || echo no-tmp-file'));
  t.is(b.stdout, 'hi\nno-tmp-file\n', 'the workspace persists, /tmp does not');
});

test('stop() kills a running command at once; an aborted signal kills it too', async (t) => {
  const h = await rt.start(await idleSpec(t));
  const running = rt.exec(h.id, sh('sleep 600'));
  await new Promise((r) => setTimeout(r, 1000));
  const t0 = Date.now();
  await rt.stop(h.id);
  const r = await running;
  t.true(Date.now() - t0 < 10_000);
  t.not(r.exit_code, 0);
  t.is(await h.exited, 137);
  await t.throwsAsync(rt.exec(h.id, sh('true')), { message: /is not running/ });

  const h2 = await rt.start(await idleSpec(t));
  t.teardown(() => rt.stop(h2.id));
  const ac = new AbortController();
  const killed = rt.exec(h2.id, { ...sh('sleep 600'), signal: ac.signal });
  setTimeout(() => ac.abort(), 500);
  const k = await killed;
  t.is(k.exit_code, 137, 'SIGKILL');
  t.false(k.timed_out);
});

test('no bubblewrap: starting an idle sandbox fails with SandboxUnavailableError and nothing runs', async (t) => {
  const broken = new ProcessRuntime({ logger: silentLogger(), sandbox: 'bwrap', bwrapPath: `/nonexistent-${randomBytes(4).toString('hex')}/bwrap` });
  const err = await t.throwsAsync(broken.start(await idleSpec(t)));
  t.true(err instanceof SandboxUnavailableError, String(err));
  t.deepEqual(broken.list(), []);
});
