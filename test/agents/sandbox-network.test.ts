// Network isolation of process (bubblewrap) sandboxes (issue 14): a sandbox WITH network used to share the host's
// network namespace and reached its loopback services (PostgreSQL with trust auth on 127.0.0.1:5432, Redis 6379,
// the node's own ports). Every sandbox now has its own namespace; one with network gets slirp4netns with the host
// loopback cut off. Real processes throughout: bwrap, slirp4netns, real TCP servers on the host.
import test, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { ProcessRuntime } from '../../src/agents/runtime/process.ts';
import { SandboxUnavailableError, type SandboxSpec, type SandboxUser } from '../../src/agents/runtime/types.ts';

const rt = new ProcessRuntime({ logger: silentLogger(), nodeId: 'test-node', sandbox: 'bwrap' });
const NOBODY: SandboxUser = { uid: 65534, gid: 65534 };
const tmpDirs: string[] = [];
const rand = () => randomBytes(4).toString('hex');

test.after.always(async () => {
  await Promise.all(rt.list().map((id) => rt.stop(id)));
  await Promise.all(tmpDirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function workspace(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'orch-sbxnet-'));
  tmpDirs.push(d);
  await chmod(d, 0o777); // written by System states (uid 65534) and by agents (the orchestrator's uid in a user namespace)
  return d;
}

function spec(over: Partial<SandboxSpec> & Pick<SandboxSpec, 'command'>): SandboxSpec {
  return { executionId: `net-${rand()}`, agentId: 'agent-net', env: {}, mounts: [], workdir: '/workspace', network: false, labels: {}, ...over };
}

/** A TCP server on the host that answers "hi" to whoever connects. */
async function server(t: ExecutionContext, host: string): Promise<number> {
  const s = net.createServer((c) => { c.on('error', () => undefined); c.end('hi'); });
  await new Promise<void>((r) => s.listen(0, host, r));
  t.teardown(() => s.close());
  return (s.address() as net.AddressInfo).port;
}

/** The host's first non-loopback IPv4 address, if it has one. */
function hostAddress(): string | undefined {
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}

// Connects to each target (host:port) and records what happened; lists the interfaces of its namespace.
const PROBE = `
import net from 'node:net';
import fs from 'node:fs';
const [outFile, ...targets] = process.argv.slice(2);
const out = { connect: {} };
for (const tgt of targets) {
  const i = tgt.lastIndexOf(':');
  out.connect[tgt] = await new Promise((r) => {
    const s = net.connect({ host: tgt.slice(0, i), port: Number(tgt.slice(i + 1)), timeout: 3000 });
    let data = '';
    // Connected: the server's greeting, or what came within 3 s (200 ms was too short at load ~20, stop 35).
    let connected = false;
    const done = () => { s.destroy(); r('connected' + (data ? ':' + data : '')); };
    s.on('data', (d) => { data += d; if (connected) done(); });
    s.on('connect', () => { connected = true; if (data) done(); else setTimeout(done, 3000); });
    s.on('timeout', () => { if (!connected) { s.destroy(); r('timeout'); } });
    s.on('error', (e) => r(e.code));
  });
}
out.interfaces = fs.readFileSync('/proc/net/dev', 'utf8').split('\\n').slice(2).map((l) => l.split(':')[0].trim()).filter(Boolean).sort();
fs.writeFileSync(outFile, JSON.stringify(out));
`;

interface ProbeOut { connect: Record<string, string>; interfaces: string[] }

async function probe(t: ExecutionContext, how: 'start' | 'run' | 'exec', network: boolean, user: SandboxUser | undefined, targets: string[]): Promise<ProbeOut> {
  const ws = await workspace();
  await writeFile(path.join(ws, 'probe.mjs'), PROBE);
  const mounts = [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }];
  const command = ['node', '/workspace/probe.mjs', '/workspace/out.json', ...targets];
  const s = spec({ command, mounts, network, ...(user ? { user } : {}) });
  if (how === 'run') {
    let r = await rt.run(s, { timeoutMs: 60_000, maxOutputBytes: 8192 });
    // bwrap failed to set up the new namespace's loopback before running anything (seen once in a clean-clone run
    // of the suite, stop 31: "bwrap: loopback: Failed RTM_NEWADDR: No child processes"; not reproduced alone): the
    // probe did not run, so once more. What is checked below is unchanged; a second failure fails the test.
    if (r.exit_code !== 0 && /^bwrap: loopback: Failed/.test(r.stderr)) {
      t.log(`sandbox setup failed once, retried: ${r.stderr.trim()}`);
      r = await rt.run(s, { timeoutMs: 60_000, maxOutputBytes: 8192 });
    }
    t.is(r.exit_code, 0, r.stderr);
  } else if (how === 'start') {
    const h = await rt.start(s);
    const code = await h.exited;
    if (code !== 0) t.log(rt.output(h.id));
    await rt.stop(h.id);
    t.is(code, 0);
  } else {
    // cmd.run over SEAL: a sibling sandbox beside a running one, with the same network setting.
    const h = await rt.start(spec({ ...s, command: ['sleep', '600'] }));
    t.teardown(() => rt.stop(h.id));
    const r = await rt.exec(h.id, { command: 'node', args: command.slice(1), cwd: '/workspace', timeout_secs: 60, max_output_bytes: 8192 });
    t.is(r.exit_code, 0, r.stderr);
  }
  return JSON.parse(await readFile(path.join(ws, 'out.json'), 'utf8')) as ProbeOut;
}

test('a sandbox with network reaches no host loopback service (PostgreSQL, Redis, a test server; via 127.0.0.1 or the gateway) but does reach the host\'s other address', async (t) => {
  t.true(rt.usesBwrap(), 'bubblewrap is part of the CI setup (scripts/setup-podman.sh)');
  const loop = await server(t, '127.0.0.1');
  const addr = hostAddress();
  const outside = addr ? await server(t, addr) : undefined;
  // 10.0.2.2 is slirp4netns's gateway: without --disable-host-loopback it leads to the host's 127.0.0.1.
  const refused = ['127.0.0.1:5432', '127.0.0.1:6379', `127.0.0.1:${loop}`, '10.0.2.2:5432', '10.0.2.2:6379', `10.0.2.2:${loop}`];
  const targets = [...refused, ...(addr ? [`${addr}:${outside}`] : [])];
  for (const [how, user] of [['start', undefined], ['run', NOBODY], ['exec', undefined], ['run', undefined]] as const) {
    const label = `${how}${user ? ' as uid 65534 (System state)' : ' (agent)'}`;
    const out = await probe(t, how, true, user, targets);
    for (const tgt of refused) t.false(out.connect[tgt]?.startsWith('connected'), `${label}: ${tgt} answered from inside a sandbox with network`);
    if (addr) t.is(out.connect[`${addr}:${outside}`], 'connected:hi', `${label}: the host's non-loopback address ${addr} is reachable`);
    else t.log('this host has no non-loopback IPv4 address: only the tap device is checked');
    t.deepEqual(out.interfaces, ['lo', 'tap0'], label);
  }
});

test('a sandbox without network has no interface but lo and reaches nothing', async (t) => {
  const loop = await server(t, '127.0.0.1');
  for (const [how, user] of [['run', NOBODY], ['start', undefined]] as const) {
    const out = await probe(t, how, false, user, [`127.0.0.1:${loop}`, '127.0.0.1:5432']);
    t.deepEqual(out.interfaces, ['lo'], how);
    for (const [tgt, r] of Object.entries(out.connect)) t.false(r.startsWith('connected'), `${how}: ${tgt}`);
  }
});

test('no slirp4netns: a sandbox with network fails saying why, its command never runs, and never with the host network', async (t) => {
  const ws = await workspace();
  const marker = path.join(ws, `ran-${rand()}`);
  for (const slirp4netnsPath of [`/nonexistent-${rand()}/slirp4netns`, '/bin/false']) {
    const broken = new ProcessRuntime({ logger: silentLogger(), sandbox: 'bwrap', slirp4netnsPath });
    const s = spec({ command: ['sh', '-c', `touch /workspace/${path.basename(marker)}`], mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }], network: true });
    for (const attempt of [
      () => broken.start(s),
      () => broken.run(s, { timeoutMs: 60_000, maxOutputBytes: 1024 }),
      () => broken.run({ ...s, user: NOBODY }, { timeoutMs: 60_000, maxOutputBytes: 1024 }),
    ]) {
      const err = await attempt().then(() => undefined, (e: unknown) => e);
      t.true(err instanceof SandboxUnavailableError, `${slirp4netnsPath}: ${String(err)}`);
      t.regex((err as Error).message, /slirp4netns/);
      t.regex((err as Error).message, /never|not run/);
    }
    t.deepEqual(broken.list(), []);
    // Without network the same runtime still works: only network needs the helper.
    const r = await broken.run({ ...s, network: false, command: ['true'] }, { timeoutMs: 60_000, maxOutputBytes: 1024 });
    t.is(r.exit_code, 0);
  }
  t.false(existsSync(marker), 'a command ran although its network could not be made');
});

test('secretEnv reaches the sandbox but no host command line (ps, /proc/<pid>/cmdline)', async (t) => {
  const secret = `s3cr3t-${randomBytes(16).toString('hex')}`;
  const ws = await workspace();
  const h = await rt.start(spec({
    command: ['sh', '-c', 'printf %s "$ORCH_SEAL_CONTAINER_ID" > /workspace/seen; exec sleep 600'],
    mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }],
    env: { ORCH_SEAL_CONTAINER_ID: 'a manifest value loses', KEEP: 'me' },
    secretEnv: { ORCH_SEAL_CONTAINER_ID: secret },
  }));
  t.teardown(() => rt.stop(h.id));
  const seen = path.join(ws, 'seen');
  for (let i = 0; i < 600 && !existsSync(seen); i++) await new Promise((r) => setTimeout(r, 100));
  t.is(await readFile(seen, 'utf8'), secret);
  let scanned = 0;
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    scanned++;
    t.false(cmdline.includes(secret), `the secret is on the command line of pid ${pid}: ${cmdline.replaceAll('\0', ' ').slice(0, 200)}`);
  }
  t.true(scanned > 3);
});
