// docker-compose.cluster.yml, its PostgreSQL override and the Dockerfile, checked for their wiring: the services, the
// three-node CockroachDB cluster and its init job, Redis, two controllers and three workers; ports, environment,
// depends_on conditions, healthchecks and the workers' sandbox options; every node's NodeConfig (deploy/compose/),
// run through orch's real config loader with the environment its service gives it; and the override as
// scripts/compose-flatten.mjs merges it for podman-compose. (No CockroachDB image can run here; the PostgreSQL
// variant is brought up for real by scripts/compose-smoke.sh.)
import test from 'ava';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import { parse } from 'yaml';
import { loadNodeConfig } from '../../src/config/load.ts';
import type { NodeConfig } from '../../src/config/types.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface Service {
  image?: string;
  build?: string | { context: string };
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, string>;
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[]; interval?: string; retries?: number };
  configs?: { source: string; target: string }[];
  volumes?: string[];
  security_opt?: string[];
  profiles?: string[];
  hostname?: string;
  restart?: string;
}

interface Compose {
  services: Record<string, Service>;
  configs: Record<string, { file: string }>;
  volumes: Record<string, unknown>;
}

// Merge keys (`<<: *anchor`) as Compose reads them.
const compose = parse(readFileSync(path.join(ROOT, 'docker-compose.cluster.yml'), 'utf8'), { merge: true }) as Compose;
const S = compose.services;
const CRDB = ['crdb-1', 'crdb-2', 'crdb-3'];
const CONTROLLERS = ['controller-1', 'controller-2'];
const WORKERS = ['worker-1', 'worker-2', 'worker-3'];
const ORCH = [...CONTROLLERS, ...WORKERS];

const SAMPLE: Record<string, string> = {
  ORCH_JWKS_URL: 'https://idp.example/realms/orch/protocol/openid-connect/certs',
  ORCH_AUTH_ISSUER: 'https://idp.example/realms/orch',
  ORCH_CLUSTER_JOIN_TOKEN: 'c0ffee'.repeat(8),
};

/** `${VAR:?msg}` given sample values, `${VAR:-default}` its default (what Compose does with an unset VAR). */
function interpolate(v: string): string {
  return v
    .replace(/\$\{(\w+):\?[^}]*\}/g, (_m, n: string) => SAMPLE[n] ?? `no sample for ${n}`)
    .replace(/\$\{(\w+):-([^}]*)\}/g, (_m, _n: string, d: string) => d);
}

/** The environment a service's process sees. */
function envOf(name: string, services: Record<string, Service> = S): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(services[name]!.environment ?? {})) env[k] = interpolate(String(v));
  return env;
}

function nodeConfig(name: string): NodeConfig {
  const ref = S[name]!.configs?.[0];
  if (!ref) throw new Error(`${name} mounts no config`);
  const cfg = compose.configs[ref.source];
  if (!cfg) throw new Error(`${name}: config ${ref.source} is not defined`);
  return loadNodeConfig({ text: readFileSync(path.join(ROOT, cfg.file), 'utf8'), env: envOf(name), cwd: '/app' });
}

function hostPorts(): string[] {
  return Object.values(S).flatMap((s) => (s.ports ?? []).map((p) => interpolate(p).split(':')[0]!));
}

test('the services: a three-node CockroachDB cluster with its init job, Redis, two controllers, three workers', (t) => {
  t.deepEqual(Object.keys(S).sort(), [...CRDB, 'db-init', 'redis', ...ORCH].sort());
  for (const v of [...CRDB, ...ORCH]) t.true(v in compose.volumes, `named volume ${v}`);
});

test('CockroachDB: three nodes joined to each other, readiness healthchecks, an init job that creates the orch database', (t) => {
  for (const n of CRDB) {
    const s = S[n]!;
    t.regex(s.image ?? '', /^cockroachdb\/cockroach:v\d+\.\d+\.\d+$/, 'a pinned CockroachDB image');
    const cmd = String(s.command);
    t.regex(cmd, /^start\b/);
    t.true(cmd.includes(`--listen-addr=${n}:26257`), `${n} listens on its own name`);
    const join = /--join=(\S+)/.exec(cmd)?.[1]?.split(',') ?? [];
    t.deepEqual(join.sort(), CRDB.map((c) => `${c}:26257`), `${n} joins all three`);
    t.true(s.healthcheck?.test.join(' ').includes('/health?ready=1'), `${n} healthcheck waits for readiness`);
    t.true(s.volumes?.some((v) => v.startsWith(`${n}:/cockroach/cockroach-data`)), `${n} keeps its data in a volume`);
  }
  const init = S['db-init']!;
  t.is(init.restart, 'no', 'a one-shot job');
  t.is(init.depends_on, undefined, 'it waits for the nodes by itself (an override swaps the database without it)');
  const script = ([] as string[]).concat(init.command ?? []).join('\n');
  t.regex(script, /cockroach init --insecure --host=crdb-1:26257/);
  t.regex(script, /CREATE DATABASE IF NOT EXISTS orch/);
  t.regex(script, /already been initialized/, 're-running the job on an initialised cluster succeeds');
});

test('Redis with a healthcheck', (t) => {
  t.regex(S.redis!.image ?? '', /^redis:/);
  t.deepEqual(S.redis!.healthcheck?.test, ['CMD', 'redis-cli', 'ping']);
});

test('orch nodes: built from the Dockerfile, ready-probe healthchecks, started after the database is initialised and ready', (t) => {
  for (const n of ORCH) {
    const s = S[n]!;
    t.is(interpolate(s.image ?? ''), 'orch:latest');
    t.is(typeof s.build === 'string' ? s.build : s.build?.context, '.');
    t.true(s.healthcheck?.test.join(' ').includes('http://127.0.0.1:8080/health/ready'), `${n} healthcheck`);
    t.is(s.depends_on?.['db-init']?.condition, 'service_completed_successfully', `${n} waits for db-init (the database initialised and serving SQL)`);
    t.is(s.depends_on?.redis?.condition, 'service_healthy', `${n} waits for redis`);
    t.deepEqual(s.command, ['up', '--config', '/etc/orch/node.yaml']);
    t.true(s.volumes?.some((v) => v === `${n}:/var/lib/orch`), `${n} keeps its data dir in a volume`);
  }
  for (const w of WORKERS) for (const c of CONTROLLERS) t.is(S[w]!.depends_on?.[c]?.condition, 'service_healthy', `${w} joins once ${c} is healthy`);
  for (const c of CONTROLLERS) t.false(WORKERS.some((w) => w in (S[c]!.depends_on ?? {})), 'controllers do not wait for workers');
});

test('environment: each node reaches a CockroachDB node, the orch database and Redis; one identity provider for all', (t) => {
  for (const n of ORCH) {
    const env = envOf(n);
    const db = new URL(env.DATABASE_URL ?? '');
    t.is(db.protocol, 'postgresql:');
    t.true(CRDB.includes(db.hostname), `${n} DATABASE_URL host ${db.hostname} is a CockroachDB service`);
    t.is(db.port, '26257');
    t.is(db.pathname, '/orch');
    t.is(db.username, 'root');
    t.is(env.REDIS_URL, 'redis://redis:6379');
    t.is(env.ORCH_HTTP_BIND, '0.0.0.0');
    t.regex(String(S[n]!.environment?.ORCH_JWKS_URL), /^\$\{ORCH_JWKS_URL:\?/, 'compose refuses to start without an identity provider');
    t.regex(String(S[n]!.environment?.ORCH_CLUSTER_JOIN_TOKEN), /^\$\{ORCH_CLUSTER_JOIN_TOKEN:\?/, 'compose refuses to start without a join token');
  }
  // The controllers connect to different CockroachDB nodes, so one database node down leaves a controller reachable.
  t.not(envOf('controller-1').DATABASE_URL, envOf('controller-2').DATABASE_URL);
});

test('ports: the controllers publish HTTP and runtime gRPC; no host port is published twice', (t) => {
  const ports = (n: string): string[] => (S[n]!.ports ?? []).map(interpolate);
  t.true(ports('controller-1').includes('8080:8080'));
  t.true(ports('controller-2').includes('8081:8080'));
  t.true(ports('controller-1').includes('50051:50051'));
  for (const w of WORKERS) t.deepEqual(S[w]!.ports ?? [], [], `${w} is reached on the compose network only`);
  const published = hostPorts();
  t.deepEqual(published, [...new Set(published)], 'no host port collision');
});

test('every node config loads through orch\'s config loader: roles, ids, the cluster wiring, tags, database and Redis', (t) => {
  const controllers = CONTROLLERS.map((n) => [n, nodeConfig(n)] as const);
  for (const [n, c] of controllers) {
    t.is(c.node.role, 'controller');
    t.is(c.node.id, n, 'ORCH_NODE_ID names the controller after its service');
    t.is(c.http.bind, '0.0.0.0');
    t.is(c.http.port, 8080);
    t.is(c.grpc.port, 50051);
    t.is(c.cluster.cluster_grpc_port, 50056);
    t.truthy(c.cluster.workflow_lease_seconds);
    t.true(c.cluster.workflow_lease_seconds! * (4 / 3) < 10, 'lease + sweep keeps controller failover under 10 s');
    t.is(c.database.url, envOf(n).DATABASE_URL);
    t.is(c.redis.url, 'redis://redis:6379');
    t.is(c.auth?.jwks_url, 'https://idp.example/realms/orch/protocol/openid-connect/certs');
    t.is(c.cluster.join_token, SAMPLE.ORCH_CLUSTER_JOIN_TOKEN, 'the controller admits workers with the join token');
  }
  const tags: Record<string, string[]> = {};
  for (const n of WORKERS) {
    const c = nodeConfig(n);
    t.is(c.node.role, 'worker');
    t.is(c.node.id, n);
    tags[n] = c.node.tags;
    const listed = c.cluster.controllers ?? [];
    t.deepEqual(listed.map((a) => a.split(':')[0]).sort(), [...CONTROLLERS].sort(), `${n} lists every controller service, so it can fail over (${listed.join(', ')})`);
    for (const a of listed) t.is(Number(a.split(':')[1]), 50056, 'on its cluster gRPC port');
    t.is(c.node.grpc_address, `${n}:50056`, `${n} is dialled by its service name on the cluster port`);
    t.is(c.runtime.orchestrator_url, `http://${n}:8080`, 'agent sandboxes call back the worker that runs them');
    t.is(c.cluster.heartbeat_interval_seconds, 1);
    t.is(c.cluster.join_token, SAMPLE.ORCH_CLUSTER_JOIN_TOKEN, `${n} presents the join token`);
    t.is(c.database.url, envOf(n).DATABASE_URL);
    t.is(c.redis.url, 'redis://redis:6379');
  }
  t.deepEqual(tags, { 'worker-1': [], 'worker-2': [], 'worker-3': ['gpu'] }, 'tag routing has a tagged worker');
  const joined = new Set(WORKERS.map((n) => nodeConfig(n).cluster.controllers?.[0]?.split(':')[0]));
  t.is(joined.size, 2, 'workers are spread over both controllers (the first in each list)');
});

test('Dockerfile: a Node 20 base (build argument, public default), compiled in a build stage, production dependencies, dist/ and ui/dist, orch as the entrypoint, the three ports, a ready-probe healthcheck, not root', (t) => {
  const df = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  t.regex(df, /^ARG BASE_IMAGE=node:20-bookworm-slim$/m);
  t.regex(df, /^FROM \$\{BASE_IMAGE\} AS build$/m);
  // BUILD_FLAGS is empty unless given (a type-checked build); the image smoke test passes --no-check.
  t.regex(df, /^ARG BUILD_FLAGS=$/m);
  t.regex(df, /^RUN node scripts\/build\.mjs \$BUILD_FLAGS$/m);
  t.regex(df, /npm ci --omit=dev/);
  t.regex(df, /^COPY --from=build \/app\/dist \.\/dist$/m);
  t.regex(df, /^COPY ui\/dist \.\/ui\/dist$/m, 'the dashboard is in the image (GET /ui answered 503 without it)');
  const runtime = df.slice(df.lastIndexOf('\nFROM '));
  t.notRegex(runtime, /^COPY src /m, 'the runtime stage holds no TypeScript sources');
  t.regex(df, /^EXPOSE 8080 50051 50056$/m);
  t.regex(df, /^ENTRYPOINT \[.*"node", "bin\/orch\.js"\]$/m);
  t.regex(df, /^CMD \["up"\]$/m);
  t.regex(df, /^HEALTHCHECK [\s\S]*\/health\/ready/m);
  t.regex(df, /^USER node$/m);
  t.regex(df, /ORCH_HTTP_BIND=0\.0\.0\.0/);
  const ignore = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n');
  t.true(ignore.includes('node_modules') && ignore.includes('.git'), 'the build context leaves node_modules and .git out');
});

test('workers may make bubblewrap sandboxes in their container (security options); controllers get none', (t) => {
  for (const w of WORKERS) t.deepEqual(S[w]!.security_opt, ['seccomp=unconfined', 'apparmor=unconfined', 'systempaths=unconfined'], w);
  for (const c of CONTROLLERS) t.is(S[c]!.security_opt, undefined, c);
  for (const n of ORCH) t.false(JSON.stringify(S[n]).includes('privileged'), `${n} is not privileged`);
});

test('the PostgreSQL override, merged for podman-compose: 2 controllers, 2 workers, PostgreSQL, Redis; lists replaced, configs mounted', (t) => {
  const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'orch-flat-')), 'compose.yml');
  execFileSync(process.execPath, ['scripts/compose-flatten.mjs', '-f', 'docker-compose.cluster.yml', '-f', 'docker-compose.postgres.yml', '-o', out], { cwd: ROOT });
  const flat = parse(readFileSync(out, 'utf8')) as Compose;
  const F = flat.services;
  t.deepEqual(Object.keys(F).sort(), ['controller-1', 'controller-2', 'db-init', 'postgres', 'redis', 'worker-1', 'worker-2']);
  t.deepEqual(F['db-init']!.entrypoint, ['/bin/sh', '-c'], 'replaced, not appended to the CockroachDB job');
  t.is(([] as string[]).concat(F['db-init']!.command ?? []).length, 1);
  t.regex(String(F['db-init']!.command), /pg_isready -h postgres/);
  for (const n of ['controller-1', 'controller-2', 'worker-1', 'worker-2']) {
    t.is(envOf(n, F).DATABASE_URL, 'postgresql://postgres@postgres:5432/orch?sslmode=disable');
    t.deepEqual(Object.keys(F[n]!.depends_on ?? {}).filter((d) => d.startsWith('crdb')), []);
    const mount = F[n]!.volumes?.find((v) => v.endsWith(':/etc/orch/node.yaml:ro'));
    t.truthy(mount, `${n} mounts its node config`);
    t.true(readFileSync(mount!.split(':')[0]!, 'utf8').includes('kind: NodeConfig'));
  }
  t.deepEqual(F['worker-1']!.security_opt, S['worker-1']!.security_opt);
  t.is(F['redis']!.image, '${ORCH_REDIS_IMAGE:-redis:7-alpine}');
  t.true(F['postgres']!.volumes?.includes('postgres:/var/lib/postgresql/data'), 'PostgreSQL keeps its data in a volume');
});
