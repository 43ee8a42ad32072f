// Issue 15, item 2: supervisors and scripts signal the process they started. `npm start` (and `npx orch up`) put
// npm and a shell between that process and the node; SIGTERM to npm used to leave the node running, re-parented to
// PID 1 with its ports bound. Here the real `npm start` / `npx orch up` of this checkout is started on free ports
// with a scratch data dir, SIGTERM goes to the npm process itself, and within 10 s every process of that start is
// gone and the three ports can be bound again.
import test from 'ava';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from '../support/node-process.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

async function canBind(port: number): Promise<boolean> {
  const srv = createServer();
  return new Promise((resolve) => {
    srv.once('error', () => resolve(false));
    srv.listen(port, '0.0.0.0', () => srv.close(() => resolve(true)));
  });
}

/** Every live process whose environment carries `marker` (npm, its shell, the node …). */
async function processesWith(marker: string): Promise<number[]> {
  const out: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const env = await readFile(`/proc/${entry}/environ`, 'latin1').catch(() => '');
    if (env.split('\0').includes(marker)) out.push(Number(entry));
  }
  return out;
}

async function signalTheStarter(t: import('ava').ExecutionContext, command: string, args: string[], signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-signals-'));
  const marker = `ORCH_DATA_DIR=${path.join(dir, 'data')}`;
  t.teardown(async () => {
    // Whatever the outcome, nothing this test started outlives it.
    for (const pid of await processesWith(marker)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await rm(dir, { recursive: true, force: true });
  });
  // The ports are picked free, then bound by the node a moment later: another test may take one in between. A start
  // that ends on EADDRINUSE before its banner is tried again on other ports (up to three times).
  let output = '';
  let child!: ReturnType<typeof spawn>;
  let ports: number[] = [];
  let exited!: Promise<void>;
  for (let attempt = 1; ; attempt++) {
    ports = [await freePort(), await freePort(), await freePort()];
    const [httpPort, grpcPort, clusterPort] = ports as [number, number, number];
    output = '';
    const started = spawn(command, args, {
      cwd: ROOT,
      env: { ...process.env, ORCH_DATA_DIR: path.join(dir, 'data'), ORCH_HTTP_PORT: String(httpPort), ORCH_GRPC_PORT: String(grpcPort), ORCH_CLUSTER_GRPC_PORT: String(clusterPort), ORCH_CONFIG: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = started;
    started.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    started.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    let hasExited = false;
    exited = new Promise<void>((resolve) => started.once('exit', () => ((hasExited = true), resolve())));
    // The banner is printed once the node is up and its signal handlers are installed (/health answers a little
    // earlier, while a signal would still find no handler).
    const up = await eventually(async () => (/ is up\n/.test(output) ? 'up' : hasExited ? 'exited' : undefined), 180_000, `the banner of ${command} ${args.join(' ')}`).catch((err: Error) => {
      throw new Error(`${err.message}; output:\n${output.slice(-3000)}`);
    });
    if (up === 'up') break;
    if (!/EADDRINUSE/.test(output) || attempt >= 3) throw new Error(`${command} ${args.join(' ')} exited before its banner; output:\n${output.slice(-3000)}`);
    t.log(`attempt ${attempt}: a port was taken before the node bound it; trying other ports`);
  }
  const http = ports[0]!;
  t.true(await fetch(`http://127.0.0.1:${http}/health`).then((r) => r.ok), '/health answers');
  const started = await processesWith(marker);
  t.true(started.length >= 2, `npm and the node: ${started.join(', ')}`);

  t.true(child.kill(signal));
  const t0 = Date.now();
  const gone = await eventually(async () => ((await processesWith(marker)).length === 0 ? Date.now() - t0 : undefined), 60_000, 'every process to exit').catch(() => undefined);
  await exited;
  t.truthy(gone, `still running 60 s after ${signal}: ${(await processesWith(marker)).join(', ')}; output:\n${output.slice(-3000)}`);
  t.log(`${gone} ms from ${signal} to the last process gone`);
  t.true((gone ?? Infinity) < 10_000, `${gone} ms from ${signal} to the last process gone`);
  for (const port of ports) t.true(await canBind(port), `port ${port} is free`);
  t.regex(output, /shutting down gracefully/, 'the node stopped through its SIGTERM handler (sent by npm, or by itself once npm was gone)');
  // And the start was clean: no deprecation warning (FastifyDeprecation FSTDEP023 printed on every start, issue 15).
  t.notRegex(output, /Deprecation|FSTDEP/);
}

test('SIGTERM to `npm start` stops the node within 10 s and frees its ports', async (t) => {
  await signalTheStarter(t, 'npm', ['start']);
});

test('SIGTERM to `npx orch up` stops the node within 10 s and frees its ports', async (t) => {
  await signalTheStarter(t, 'npx', ['--no-install', 'orch', 'up']);
});

test('SIGHUP to `npm start` (npm ends without passing it on) stops the node within 10 s', async (t) => {
  await signalTheStarter(t, 'npm', ['start'], 'SIGHUP');
});
