// ProcessRuntime: with bubblewrap (scripts/setup-podman.sh installs it; a missing or broken bwrap FAILS the bwrap
// tests and makes every start reject, never a plain process) and the operator's unsandboxed mode (sandbox: 'none').
import test, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { ProcessRuntime, resolvePath, rewriteSandboxValue } from '../../src/agents/runtime/process.ts';
import { createRuntime } from '../../src/agents/runtime/select.ts';
import { GATEWAY_SOCKET_NAME, SandboxUnavailableError, type SandboxSpec } from '../../src/agents/runtime/types.ts';

const bw = createRuntime('process', { logger: silentLogger(), nodeId: 'test-node', process: { sandbox: 'bwrap' } });
const plain = new ProcessRuntime({ logger: silentLogger(), nodeId: 'test-node', sandbox: 'none' });
const tmpDirs: string[] = [];
const rand = () => randomBytes(4).toString('hex');

test.after.always(async () => {
  for (const rt of [bw, plain]) await Promise.all(rt.list().map((id) => rt.stop(id)));
  await Promise.all(tmpDirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function tmp(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'orch-prt-'));
  tmpDirs.push(d);
  return d;
}

function spec(over: Partial<SandboxSpec> & Pick<SandboxSpec, 'command'>): SandboxSpec {
  return {
    executionId: `test-${rand()}`,
    agentId: 'agent-test',
    env: {},
    mounts: [],
    workdir: '/workspace',
    network: false,
    labels: { 'orch.node_id': 'test-node' },
    ...over,
  };
}

/** The bwrap runtime, or a failure: bubblewrap is part of the CI setup, so its absence is an error, not a skip. */
function needBwrap(t: ExecutionContext): boolean {
  if (bw.usesBwrap()) return true;
  t.fail('bubblewrap (bwrap) is missing or cannot create namespaces here; run scripts/setup-podman.sh as root');
  return false;
}

async function unixGateway(t: ExecutionContext): Promise<string> {
  const runDir = path.join(await tmp(), 'run', 'e');
  await mkdir(runDir, { recursive: true });
  const gw = http.createServer((req, res) => res.end(JSON.stringify({ path: req.url })));
  await new Promise<void>((r) => gw.listen(path.join(runDir, GATEWAY_SOCKET_NAME), r));
  t.teardown(() => gw.close());
  return runDir;
}

const CLIENT = `
import http from 'node:http';
import net from 'node:net';
import fs from 'node:fs';
const [tcpPort, outFile] = process.argv.slice(2);
const out = {};
out.tcp = await new Promise((r) => {
  const s = net.connect({ host: '127.0.0.1', port: Number(tcpPort), timeout: 1500 });
  s.on('connect', () => { s.destroy(); r('connected'); });
  s.on('timeout', () => { s.destroy(); r('timeout'); });
  s.on('error', (e) => r(e.code));
});
const url = new URL(process.env.ORCH_ORCHESTRATOR_URL);
out.gateway = await new Promise((resolve) => {
  const req = http.request({ socketPath: url.pathname, path: '/v1/dispatch-gateway', method: 'POST' }, (res) => {
    let b = ''; res.on('data', (d) => (b += d)); res.on('end', () => resolve(JSON.parse(b)));
  });
  req.on('error', (e) => resolve(e.code));
  req.end('{}');
});
fs.writeFileSync(outFile, JSON.stringify(out));
`;

test('bwrap: exit code and a file written to a bind mount; id is process-<execution_id>', async (t) => {
  if (!needBwrap(t)) return;
  const ws = await tmp();
  const s = spec({
    command: ['sh', '-c', 'echo hi > /workspace/out.txt; exit 3'],
    mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }],
  });
  const h = await bw.start(s);
  t.is(h.id, `process-${s.executionId}`);
  t.is(await h.exited, 3);
  t.is(await readFile(path.join(ws, 'out.txt'), 'utf8'), 'hi\n');
  await bw.stop(h.id);
});

test('bwrap: only the given env (+PATH) is visible; host files outside the binds are not', async (t) => {
  if (!needBwrap(t)) return;
  process.env.ORCH_TEST_SECRET_PROC = 'sekrit-value';
  const ws = await tmp();
  const secretDir = await tmp();
  await writeFile(path.join(secretDir, 'secret.txt'), 'top secret');
  const h = await bw.start(spec({
    command: ['sh', '-c', `env > /workspace/env.txt; test -e ${secretDir}/secret.txt && echo visible > /workspace/leak.txt; exit 0`],
    env: { FOO: 'bar baz', ORCH_EXECUTION_ID: 'x1' },
    mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }],
  }));
  t.is(await h.exited, 0);
  await bw.stop(h.id);
  const env = await readFile(path.join(ws, 'env.txt'), 'utf8');
  t.regex(env, /^FOO=bar baz$/m);
  t.regex(env, /^ORCH_EXECUTION_ID=x1$/m);
  t.regex(env, /^PATH=/m);
  t.notRegex(env, /sekrit-value|ORCH_TEST_SECRET|HOME=\/root|DATABASE_URL/);
  t.false(existsSync(path.join(ws, 'leak.txt')), 'a host directory that is not mounted is invisible');
});

test('bwrap: never the host\'s loopback (with or without spec.network), the unix-socket gateway works either way; node runs', async (t) => {
  if (!needBwrap(t)) return;
  const tcp = net.createServer((s) => { s.on('error', () => undefined); s.end('x'); });
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  t.teardown(() => tcp.close());
  const port = (tcp.address() as net.AddressInfo).port;
  const runDir = await unixGateway(t);
  for (const network of [false, true]) {
    const ws = await tmp();
    await writeFile(path.join(ws, 'client.mjs'), CLIENT);
    const h = await bw.start(spec({
      command: ['node', '/workspace/client.mjs', String(port), '/workspace/out.json'],
      env: { ORCH_ORCHESTRATOR_URL: bw.orchestratorUrl(8080) },
      mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }],
      runDir,
      network,
    }));
    const code = await h.exited;
    if (code !== 0) t.log((bw as ProcessRuntime).output(h.id));
    await bw.stop(h.id);
    t.is(code, 0);
    const out = JSON.parse(await readFile(path.join(ws, 'out.json'), 'utf8'));
    t.deepEqual(out.gateway, { path: '/v1/dispatch-gateway' }, `network=${network}`);
    // Either way the host's loopback is out of reach: with network the sandbox has its own namespace behind
    // slirp4netns (test/agents/sandbox-network.test.ts has the reachable side).
    t.not(out.tcp, 'connected', `network=${network}: the host's loopback answered`);
  }
});

test('bwrap: a read-only mount cannot be written', async (t) => {
  if (!needBwrap(t)) return;
  const ro = await tmp();
  await writeFile(path.join(ro, 'in.txt'), 'data');
  const h = await bw.start(spec({
    command: ['sh', '-c', 'cat /in/in.txt >/dev/null && ! (echo x > /in/new.txt) 2>/dev/null'],
    mounts: [{ hostPath: ro, sandboxPath: '/in', readOnly: true }],
    workdir: '/in',
  }));
  t.is(await h.exited, 0);
  await bw.stop(h.id);
  t.false(existsSync(path.join(ro, 'new.txt')));
});

function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return / [ZX] /.test(stat.slice(stat.lastIndexOf(')')));
  } catch {
    return true;
  }
}

for (const [name, rt] of [['bwrap', bw], ['plain', plain]] as const) {
  test(`${name}: stop of sleep 60 ends within 2 s, kills the whole group, and is idempotent`, async (t) => {
    if (name === 'bwrap' && !needBwrap(t)) return;
    const ws = await tmp();
    const secs = String(60 + Math.floor(Math.random() * 100000)); // a unique cmdline to find the grandchild by
    const h = await rt.start(spec({
      command: ['sh', '-c', `sleep ${secs} & echo started > ready; wait`],
      mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }],
    }));
    // Up to 60 s for the sandbox to come up: the suite shares two cores with many node processes.
    for (let i = 0; i < 3000 && !existsSync(path.join(ws, 'ready')); i++) await new Promise((r) => setTimeout(r, 20));
    // Host pids of the sleeps (inside bwrap's pid namespace they have other numbers).
    const sleeps = () => readdirPids().filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8') === `sleep\x00${secs}\x00`;
      } catch {
        return false;
      }
    });
    // `ready` is written once the shell has forked the sleep, which may not have exec'd `sleep` yet on a loaded
    // machine: wait until it has.
    for (let i = 0; i < 3000 && sleeps().length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    const before = sleeps();
    t.is(before.length, 1);
    const t0 = Date.now();
    await rt.stop(h.id);
    const elapsed = Date.now() - t0;
    // Far under the sleep's 60 s: the kill ended it (stop() waits at most 2 s for the exit; the rest of the margin is
    // for a loaded suite).
    t.true(elapsed < 10_000, `stop took ${elapsed} ms`);
    t.is(await h.exited, 137);
    for (let i = 0; i < 1500 && !before.every(gone); i++) await new Promise((r) => setTimeout(r, 20));
    t.true(before.every(gone), 'the grandchild sleep was killed too');
    await t.notThrowsAsync(rt.stop(h.id));
    t.false(rt.list().includes(h.id));
  });

  test(`${name}: reap kills the tracked sandboxes carrying the label`, async (t) => {
    if (name === 'bwrap' && !needBwrap(t)) return;
    const value = `reap-${rand()}`;
    const ws = await tmp();
    const mk = (labels: Record<string, string>) => rt.start(spec({
      command: ['sleep', '60'], labels, mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }],
    }));
    const a = await mk({ 'orch.node_id': 'test-node', 'orch.test': value });
    const b = await mk({ 'orch.node_id': 'test-node', 'orch.test': value });
    const other = await mk({ 'orch.node_id': 'test-node' });
    const removed = await rt.reap('orch.test', value);
    t.deepEqual([...removed].sort(), [a.id, b.id].sort());
    t.is(await a.exited, 137);
    t.is(await b.exited, 137);
    t.true(rt.list().includes(other.id));
    await rt.stop(other.id);
    t.deepEqual(await rt.reap('orch.test', value), []);
  });
}

function readdirPids(): number[] {
  return readdirSync('/proc').filter((n) => /^\d+$/.test(n)).map(Number);
}

test('plain: sandbox paths are rewritten to host paths (cwd, argv, env, unix:// gateway URL); env is clean', async (t) => {
  process.env.ORCH_TEST_SECRET_PROC = 'sekrit-value';
  const ws = await tmp();
  const runDir = await unixGateway(t);
  const tcp = net.createServer((s) => { s.on('error', () => undefined); s.end('x'); });
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  t.teardown(() => tcp.close());
  await writeFile(path.join(ws, 'client.mjs'), CLIENT);
  const h = await plain.start(spec({
    command: ['sh', '-c', 'pwd > cwd.txt; env > "$WS/env.txt"; exec node "$@"', 'sh',
      '/workspace/client.mjs', String((tcp.address() as net.AddressInfo).port), '/workspace/out.json'],
    env: { WS: '/workspace', ORCH_ORCHESTRATOR_URL: plain.orchestratorUrl(8080), FOO: 'bar' },
    mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }],
    runDir,
  }));
  t.is(await h.exited, 0, JSON.stringify(plain.output(h.id)));
  await plain.stop(h.id);
  t.is((await readFile(path.join(ws, 'cwd.txt'), 'utf8')).trim(), ws);
  const env = await readFile(path.join(ws, 'env.txt'), 'utf8');
  t.regex(env, new RegExp(`^WS=${ws}$`, 'm'));
  t.regex(env, new RegExp(`^ORCH_ORCHESTRATOR_URL=unix://${runDir}/gateway.sock$`, 'm'));
  t.regex(env, /^FOO=bar$/m);
  t.notRegex(env, /sekrit-value|ORCH_TEST_SECRET/);
  const out = JSON.parse(await readFile(path.join(ws, 'out.json'), 'utf8'));
  t.deepEqual(out.gateway, { path: '/v1/dispatch-gateway' });
});

test('plain: exit code and output; a missing command rejects start', async (t) => {
  const ws = await tmp();
  const h = await plain.start(spec({
    command: ['sh', '-c', 'echo out; echo err >&2; exit 7'],
    mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }],
  }));
  t.is(await h.exited, 7);
  t.deepEqual(plain.output(h.id), { stdout: 'out\n', stderr: 'err\n' });
  await plain.stop(h.id);
  const noCmd = new ProcessRuntime({ logger: silentLogger(), sandbox: 'none' });
  // setpriv is used when present (it then fails with 127-ish exit); without it spawn itself fails.
  try {
    const h2 = await noCmd.start(spec({ command: [`no-such-command-${rand()}`], workdir: ws }));
    t.not(await h2.exited, 0);
    await noCmd.stop(h2.id);
  } catch (err) {
    t.regex((err as Error).message, /ENOENT/);
  }
});

test('resolvePath and rewriteSandboxValue', (t) => {
  const mounts = [
    { hostPath: '/h/ws', sandboxPath: '/workspace', readOnly: false },
    { hostPath: '/h/run', sandboxPath: '/orch/run', readOnly: false },
    { hostPath: '/h/deep', sandboxPath: '/workspace/deep', readOnly: true },
  ];
  t.is(resolvePath(mounts, '/workspace'), '/h/ws');
  t.is(resolvePath(mounts, '/workspace/a/b'), '/h/ws/a/b');
  t.is(resolvePath(mounts, '/workspace/deep/x'), '/h/deep/x');
  t.is(resolvePath(mounts, '/workspacex'), undefined);
  t.is(rewriteSandboxValue(mounts, 'unix:///orch/run/gateway.sock'), 'unix:///h/run/gateway.sock');
  t.is(rewriteSandboxValue(mounts, '/workspace/f.txt'), '/h/ws/f.txt');
  t.is(rewriteSandboxValue(mounts, 'hello /workspace'), 'hello /workspace');
  t.is(rewriteSandboxValue(mounts, 'http://127.0.0.1:8080'), 'http://127.0.0.1:8080');
});

test('no unsandboxed fallback: without a working bwrap start, exec and run reject with SandboxUnavailableError', async (t) => {
  const ws = await tmp();
  const marker = path.join(ws, `ran-${rand()}`);
  for (const bwrapPath of [`/nonexistent-${rand()}/bwrap`, '/bin/false']) {
    const rt = new ProcessRuntime({ logger: silentLogger(), bwrapPath });
    t.false(rt.usesBwrap());
    const s = spec({ command: ['sh', '-c', `touch ${marker}`], mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }] });
    const started = await rt.start(s).then(() => 'started', (err: Error) => err);
    t.true(started instanceof SandboxUnavailableError, String(started));
    t.regex((started as Error).message, /bubblewrap/);
    const ran = await rt.run(s, { timeoutMs: 60_000, maxOutputBytes: 1024 }).then(() => 'ran', (err: Error) => err);
    t.true(ran instanceof SandboxUnavailableError, String(ran));
    t.false(existsSync(marker), `a plain process ran with ${bwrapPath}`);
  }
});

test('bwrap run() with spec.user: a real unprivileged uid, no capability, no_new_privs, timeout kills', async (t) => {
  if (!needBwrap(t)) return;
  const ws = await tmp();
  // The caller hands the workspace to the user (the System runner does); a root-owned directory stays unwritable.
  await chown(ws, 65534, 65534);
  const r = await bw.run(
    spec({
      command: ['/bin/sh', '-c', 'id -u; id -G; grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status; echo hi > f; cat /etc/shadow; echo err >&2; exit 3'],
      mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }],
      user: { uid: 65534, gid: 65534 },
    }),
    { timeoutMs: 60_000, maxOutputBytes: 4096 },
  );
  t.is(r.exit_code, 3, r.stderr);
  t.is(r.stdout, '65534\n65534\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\n');
  t.regex(r.stderr, /err/);
  t.is(await readFile(path.join(ws, 'f'), 'utf8'), 'hi\n');
  const slow = await bw.run(spec({ command: ['/bin/sh', '-c', 'sleep 600'], user: { uid: 65534, gid: 65534 } }), { timeoutMs: 1000, maxOutputBytes: 1024 });
  t.true(slow.timed_out);
  t.is(slow.exit_code, 124);
  t.true(slow.duration_ms < 60_000);
});

test('bwrap: the kernel\'s global knobs are read-only and no capability is left, for agents (root mapped) and spec.user', async (t) => {
  if (!needBwrap(t)) return;
  // Writes back the value already there, so that nothing changes even on a node without the fix; a host with a
  // writable /proc/sys would accept it from a sandbox that is host uid 0 (core_pattern runs a program as root).
  const probe = 'v=$(cat /proc/sys/kernel/core_pattern); if (printf "%s\\n" "$v" > /proc/sys/kernel/core_pattern) 2>/dev/null; then echo writable; else echo refused; fi; ' +
    'mount -o remount,rw /proc/sys 2>/dev/null && echo remounted; grep CapEff /proc/self/status';
  for (const user of [undefined, { uid: 65534, gid: 65534 }]) {
    const r = await bw.run(spec({ command: ['/bin/sh', '-c', probe], ...(user ? { user } : {}) }), { timeoutMs: 60_000, maxOutputBytes: 4096 });
    t.is(r.stdout, 'refused\nCapEff:\t0000000000000000\n', `${user ? 'spec.user' : 'agent'}: ${r.stderr}`);
  }
});

test('bwrap run() with spec.user: the declared env reaches only the unprivileged command, never the root step that drops to it', async (t) => {
  if (!needBwrap(t)) return;
  // LD_DEBUG makes the dynamic loader of every process that gets it report its libraries; had the env reached
  // setpriv (still root with every capability), LD_PRELOAD of a library the tenant wrote would run as host root.
  const r = await bw.run(
    spec({ command: ['/bin/sh', '-c', 'echo "$GREETING"; id -u'], env: { LD_DEBUG: 'files', GREETING: 'hi there' }, user: { uid: 65534, gid: 65534 } }),
    { timeoutMs: 60_000, maxOutputBytes: 64 * 1024 },
  );
  t.is(r.exit_code, 0, r.stderr);
  t.is(r.stdout, 'hi there\n65534\n');
  t.regex(r.stderr, /needed by \/bin\/sh|needed by \/usr\/bin\/id/, 'the command itself does get its env');
  t.notRegex(r.stderr, /setpriv/, 'the root step saw the tenant environment');
  const bad = await bw.run(spec({ command: ['/bin/sh', '-c', 'true'], env: { 'A=B': 'x' }, user: { uid: 65534, gid: 65534 } }), { timeoutMs: 60_000, maxOutputBytes: 1024 }).then(() => 'ran', (e: Error) => e.message);
  t.regex(bad, /environment variable name/);
});
