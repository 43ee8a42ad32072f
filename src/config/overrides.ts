// The settings that can be changed without editing a file: first from the environment (documented names,
// docs/CONFIG.md), then from explicit CLI flags. Both go through the same parsers, so ORCH_HTTP_PORT=abc and a
// bad flag fail the same way: one ConfigError line naming the variable or override.
import path from 'node:path';
import { parseControllerString } from './controllers.ts';
import { ConfigError } from './errors.ts';
import { LOG_LEVELS, NODE_ID_PATTERN, NODE_ROLES } from './schema.ts';
import type { LogLevel, NodeConfig, NodeRoleName } from './types.ts';

/** Explicit overrides, typically from CLI flags; they win over the file and the environment. */
export interface ConfigOverrides {
  role?: NodeRoleName;
  nodeId?: string;
  httpBind?: string;
  httpPort?: number;
  healthPort?: number;
  grpcPort?: number;
  clusterGrpcPort?: number;
  /** host:port, or several separated by commas (spec.cluster.controller). */
  clusterController?: string;
  clusterJoinToken?: string;
  dataDir?: string;
  logLevel?: LogLevel;
  databaseUrl?: string;
  redisUrl?: string;
  dockerHost?: string;
}

interface Setting {
  env: string;
  override: keyof ConfigOverrides;
  /** Returns the parsed value or throws an Error whose message says what is expected. */
  parse(raw: string, cwd: string): unknown;
  apply(config: NodeConfig, value: unknown): void;
}

function port(raw: string): number {
  if (!/^\d{1,5}$/.test(raw.trim()) || Number(raw) > 65535) throw new Error('must be an integer port 0..65535');
  return Number(raw);
}

function oneOf<T extends string>(values: readonly T[]) {
  return (raw: string): T => {
    const v = raw.trim() as T;
    if (!values.includes(v)) throw new Error(`must be one of ${values.join(', ')}`);
    return v;
  };
}

function matching(re: RegExp, expect: string) {
  return (raw: string): string => {
    const v = raw.trim();
    if (!re.test(v)) throw new Error(`must be ${expect}`);
    return v;
  };
}

const nonEmpty = matching(/^\S+$/, 'a non-empty value without spaces');

export const SETTINGS: readonly Setting[] = [
  { env: 'DATABASE_URL', override: 'databaseUrl', parse: matching(/^postgres(ql)?:\/\/\S+$/, 'a postgres:// or postgresql:// URL'), apply: (c, v) => (c.database.url = v as string) },
  { env: 'REDIS_URL', override: 'redisUrl', parse: matching(/^rediss?:\/\/\S+$/, 'a redis:// or rediss:// URL'), apply: (c, v) => (c.redis.url = v as string) },
  { env: 'ORCH_DATA_DIR', override: 'dataDir', parse: (raw, cwd) => path.resolve(cwd, raw), apply: (c, v) => (c.dataDir = v as string) },
  { env: 'ORCH_NODE_ID', override: 'nodeId', parse: matching(new RegExp(NODE_ID_PATTERN), 'letters, digits, ".", "_" or "-" (at most 63)'), apply: (c, v) => (c.node.id = v as string) },
  { env: 'ORCH_ROLE', override: 'role', parse: oneOf(NODE_ROLES), apply: (c, v) => (c.node.role = v as NodeRoleName) },
  { env: 'ORCH_HTTP_BIND', override: 'httpBind', parse: nonEmpty, apply: (c, v) => (c.http.bind = v as string) },
  { env: 'ORCH_HTTP_PORT', override: 'httpPort', parse: port, apply: (c, v) => (c.http.port = v as number) },
  { env: 'ORCH_HEALTH_PORT', override: 'healthPort', parse: port, apply: (c, v) => (c.http.health_port = v as number) },
  { env: 'ORCH_GRPC_PORT', override: 'grpcPort', parse: port, apply: (c, v) => (c.grpc.port = v as number) },
  { env: 'ORCH_CLUSTER_GRPC_PORT', override: 'clusterGrpcPort', parse: port, apply: (c, v) => (c.cluster.cluster_grpc_port = v as number) },
  {
    env: 'ORCH_CLUSTER_CONTROLLER',
    override: 'clusterController',
    parse: parseControllerString,
    apply: (c, v) => (c.cluster.controllers = v as string[]),
  },
  // The join token (a secret): the environment is where it belongs; there is no CLI flag (argv is visible to `ps`).
  {
    env: 'ORCH_CLUSTER_JOIN_TOKEN',
    override: 'clusterJoinToken',
    parse: matching(/^[\x21-\x7e]{16,}$/, 'at least 16 printable ASCII characters, no spaces'),
    apply: (c, v) => (c.cluster.join_token = v as string),
  },
  { env: 'ORCH_LOG_LEVEL', override: 'logLevel', parse: oneOf(LOG_LEVELS), apply: (c, v) => (c.log.level = v as LogLevel) },
  { env: 'DOCKER_HOST', override: 'dockerHost', parse: nonEmpty, apply: (c, v) => (c.runtime.docker_host = v as string) },
];

/** The environment variables read by the loader itself (ORCH_CONFIG is read by the CLI). */
export const ENV_OVERRIDE_NAMES: readonly string[] = SETTINGS.map((s) => s.env);

export function applyEnvOverrides(config: NodeConfig, env: Record<string, string | undefined>, cwd: string): void {
  for (const s of SETTINGS) {
    const raw = env[s.env];
    // An empty variable is treated as unset, as shells and compose files commonly produce them.
    if (raw === undefined || raw.trim() === '') continue;
    s.apply(config, parseOrThrow(s, raw, cwd, s.env));
  }
}

export function applyOverrides(config: NodeConfig, overrides: ConfigOverrides, cwd: string): void {
  for (const s of SETTINGS) {
    const value = overrides[s.override];
    if (value === undefined) continue;
    s.apply(config, parseOrThrow(s, String(value), cwd, `override ${s.override}`));
  }
}

function parseOrThrow(s: Setting, raw: string, cwd: string, key: string): unknown {
  try {
    return s.parse(raw, cwd);
  } catch (err) {
    throw new ConfigError(key, (err as Error).message);
  }
}
