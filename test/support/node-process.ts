// Starts real `orch up` processes for tests: the same bin a user runs, on ephemeral ports, logs kept for failure
// messages. Each process gets the environment it is given plus ephemeral ports.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const ORCH_BIN = path.join(ROOT, 'bin/orch.js');

export interface Banner {
  status: string;
  node_id: string;
  role: string;
  http: string;
  grpc: string;
  cluster?: string;
  /** The liveness thread's /health/live, when the node has a health port (ORCH_HEALTH_PORT). */
  health?: string;
  database: string;
  bus: string;
  dev_token?: string;
}

export interface NodeProcess {
  child: ChildProcess;
  banner: Banner;
  stderr(): string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
  kill(signal: NodeJS.Signals): Promise<number | string>;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `orch <args>` to completion. The default deadline is generous: a CLI start (tsx) alone has taken tens of
 * seconds on a loaded two-core CI machine. */
export function runOrch(args: string[], env: Record<string, string | undefined>, timeoutMs = 120_000): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [ORCH_BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`orch ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * The cluster join token every node started by the tests gets (ORCH_CLUSTER_JOIN_TOKEN): controllers admit workers
 * that present it, workers present it (docs/CLUSTER.md "Joining"). Pass `ORCH_CLUSTER_JOIN_TOKEN: undefined` for a
 * node without one.
 */
export const TEST_JOIN_TOKEN = 'orch-test-join-token-0123456789';

/**
 * Starts `orch up --json` and waits for its banner line. `wrap` is a command prefix that execs the node (e.g.
 * `ip netns exec NS`, which replaces itself with the node, so `child.pid` stays the node's pid). The default wait is
 * 180 s: a node on a fresh PGlite applies every migration, and on a heavily loaded machine 90 s was not enough.
 */
/**
 * Node flags for the nodes the tests start, from ORCH_TEST_NODE_FLAGS (space-separated; ava.config.mjs sets it for
 * its workers, so benchmarks, which start nodes through this file too, run them as users do). ava sets
 * `--liftoff-only`: a PGlite node then runs PostgreSQL's WebAssembly with V8's baseline compiler only, without
 * optimising the hot functions in the background. A test node lives seconds to minutes, and that optimising was
 * ~1.5 s of the ~6 s of CPU a node's start cost (a fresh node to its banner: 5.9-6.8 → 4.2-4.6 s of CPU, 4.6-5.6 →
 * 3.6-4.0 s wall, load ~4; issue 15). The SQL is the same; a long-lived node is better off optimising.
 */
export function testNodeFlags(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.ORCH_TEST_NODE_FLAGS ?? '').split(' ').filter(Boolean);
}

/** A node being started: resolves with it at its banner; `stderr()` reads what it has logged so far, before that too. */
export type StartingNode = Promise<NodeProcess> & { stderr(): string };

/** `bin`: another checkout's bin/orch.js (bench/startup.ts compares two builds). */
export function startOrchNode(env: Record<string, string | undefined>, args: string[] = [], timeoutMs = 180_000, wrap: string[] = [], bin = ORCH_BIN): StartingNode {
  const argv = [...wrap, process.execPath, ...testNodeFlags(), bin, '--json', 'up', ...args];
  const child = spawn(argv[0]!, argv.slice(1), {
    env: {
      ...process.env,
      ORCH_HTTP_PORT: '0',
      ORCH_GRPC_PORT: '0',
      ORCH_CLUSTER_GRPC_PORT: '0',
      ORCH_LOG_LEVEL: 'info',
      ORCH_CLUSTER_JOIN_TOKEN: TEST_JOIN_TOKEN,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? signal ?? -1));
  });
  const starting = new Promise<NodeProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`orch up did not start in ${timeoutMs} ms; stderr:\n${stderr.slice(-4000)}`));
    }, timeoutMs);
    const onEarlyExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      clearTimeout(timer);
      reject(new Error(`orch up exited (${code ?? signal}) before its banner; stderr:\n${stderr.slice(-4000)}`));
    };
    child.on('exit', onEarlyExit);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const nl = stdout.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      // Only our early-exit rejection goes; the listener behind `exited` must stay.
      child.off('exit', onEarlyExit);
      try {
        const banner = JSON.parse(stdout.slice(0, nl)) as Banner;
        resolve({
          child,
          banner,
          stderr: () => stderr,
          exited,
          kill: async (signal) => {
            child.kill(signal);
            return exited;
          },
        });
      } catch (err) {
        reject(new Error(`bad banner line ${stdout.slice(0, nl)}: ${(err as Error).message}`));
      }
    });
  });
  return Object.assign(starting, { stderr: () => stderr });
}

/** Polls `probe` until it returns a non-undefined value or the time is up. */
export async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 30_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      lastErr = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${lastErr ? `: ${(lastErr as Error).message}` : ''}`);
}
