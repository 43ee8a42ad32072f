// `npm test` runs this first (`pretest`): checks, in well under a second when all is there, what the suite needs on
// this machine — PostgreSQL and Redis answering, bubblewrap and slirp4netns, podman's Docker API with the local
// runtime image, libfuse with the FUSE binding, chromium (issue 15 item 3: `npm test` used to pass only where
// someone had set the machine up by hand). When something is missing and this runs as root with apt-get, it runs
// scripts/setup-test-machine.sh (idempotent) and checks again; otherwise it fails at once with one line naming
// what is missing and the one command to run. Spawns nothing while everything is present.
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SETUP_COMMAND = 'sudo scripts/setup-test-machine.sh';
const DEFAULT_DOCKER_HOST = 'unix:///run/orch-podman/podman.sock';
const RUNTIME_IMAGE = 'localhost/orch-runtime:latest';

/** The executable `name` on PATH, or undefined. */
function which(name, env) {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      if (statSync(p).isFile()) return p;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

// The deadlines only matter for a server that accepts and then hangs: an absent one refuses at once. A loaded
// podman service has taken over a second to answer an inspect; that is slow, not missing.
/** Connects to host:port and, with `send`, answers the first bytes back; undefined when nothing answers in time. */
function tcp(host, port, send, timeoutMs = 5000) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    let got = '';
    const done = (v) => {
      socket.destroy();
      resolve(v);
    };
    socket.setTimeout(timeoutMs, () => done(undefined));
    socket.once('error', () => done(undefined));
    socket.once('connect', () => (send ? socket.write(send) : done('')));
    socket.on('data', (d) => {
      got += d.toString();
      if (got.includes('\n')) done(got);
    });
  });
}

function hostPort(url, fallbackPort) {
  try {
    const u = new URL(url);
    return { host: u.hostname || '127.0.0.1', port: Number(u.port) || fallbackPort };
  } catch {
    return { host: '127.0.0.1', port: fallbackPort };
  }
}

/** GET `p` on the Docker API at a unix socket; { status, body } or undefined. */
function dockerGet(socketPath, p, timeoutMs = 10_000) {
  return new Promise((resolve) => {
    const req = http.get({ socketPath, path: p, timeout: timeoutMs }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
  });
}

/** What is missing, each as a short name; empty when the machine is ready. */
export async function missing(env = process.env) {
  const out = [];
  const pg = hostPort(env.DATABASE_URL ?? 'postgres://127.0.0.1:5432', 5432);
  const redis = hostPort(env.REDIS_URL ?? 'redis://127.0.0.1:6379', 6379);
  const dockerHost = env.DOCKER_HOST || DEFAULT_DOCKER_HOST;
  const socketPath = dockerHost.startsWith('unix://') ? dockerHost.slice('unix://'.length) : undefined;
  // One request to the engine: inspecting the image also proves the API answers.
  const [pgUp, redisUp, image] = await Promise.all([
    tcp(pg.host, pg.port),
    tcp(redis.host, redis.port, 'PING\r\n'),
    socketPath ? dockerGet(socketPath, `/images/${RUNTIME_IMAGE}/json`) : Promise.resolve(undefined),
  ]);
  if (pgUp === undefined) out.push(`PostgreSQL at ${pg.host}:${pg.port}`);
  if (!redisUp?.startsWith('+PONG')) out.push(`Redis at ${redis.host}:${redis.port}`);
  if (!which('bwrap', env)) out.push('bubblewrap');
  // The network of process sandboxes that have network (src/agents/runtime/sandbox-net.ts).
  if (!which('slirp4netns', env)) out.push('slirp4netns');
  if (!which('podman', env)) out.push('podman');
  if (socketPath && image === undefined) out.push(`the podman API at ${socketPath}`);
  else if (socketPath) {
    // The image embeds the host's node binary (setup-podman.sh labels it orch.node): a new node means a rebuild.
    let label;
    try {
      label = JSON.parse(image?.body ?? '{}')?.Config?.Labels?.['orch.node'];
    } catch {
      label = undefined;
    }
    if (image?.status !== 200 || label !== process.version) out.push(`the runtime image ${RUNTIME_IMAGE} for node ${process.version}`);
  }
  if (!which('fusermount3', env) || !existsSync('/dev/fuse')) out.push('libfuse (fuse3)');
  else {
    try {
      createRequire(path.join(ROOT, 'package.json'))(path.join(ROOT, 'native/fuse3/build/Release/orch_fuse3.node'));
    } catch {
      out.push('the libfuse 3 binding (native/fuse3, built by npm install against libfuse3-dev)');
    }
  }
  const chromium = env.CHROMIUM_PATH || '/usr/bin/chromium';
  try {
    accessSync(chromium, constants.X_OK);
  } catch {
    out.push(`chromium (${chromium})`);
  }
  return out;
}

function isRoot() {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

export async function main(env = process.env) {
  let gaps = await missing(env);
  if (gaps.length === 0) return 0;
  if (isRoot() && which('apt-get', env) && env.ORCH_PREFLIGHT_NO_SETUP !== '1') {
    process.stderr.write(`npm test: setting up ${gaps.join(', ')} (scripts/setup-test-machine.sh)\n`);
    const res = spawnSync(path.join(ROOT, 'scripts/setup-test-machine.sh'), { stdio: 'inherit', env });
    gaps = res.status === 0 ? await missing(env) : gaps;
    if (gaps.length === 0) return 0;
  }
  process.stderr.write(`npm test: missing ${gaps.join(', ')}; run \`${SETUP_COMMAND}\` once, then npm test again\n`);
  return 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main();
}
