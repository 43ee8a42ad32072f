// loadNodeConfig: the one way to get a NodeConfig. Options in, validated and defaulted config out:
//   YAML text → env:NAME references → schema → cross-field checks → defaults → environment overrides → overrides.
// It never reads process.env itself; the CLI passes the environment in.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkConfigFile } from './checks.ts';
import { withDefaults } from './defaults.ts';
import { resolveEnvRefs } from './env-refs.ts';
import { ConfigError } from './errors.ts';
import { applyEnvOverrides, applyOverrides, type ConfigOverrides } from './overrides.ts';
import { parseConfigYaml } from './parse.ts';
import type { NodeConfigFile } from './schema.ts';
import type { NodeConfig } from './types.ts';
import { validateConfigFile } from './validate.ts';

export type { ConfigOverrides } from './overrides.ts';

export interface LoadNodeConfigOptions {
  /** Path of a NodeConfig YAML file. With `text` too, it only names the source (messages, relative paths). */
  file?: string;
  /** The YAML itself; wins over reading `file`. */
  text?: string;
  /** The environment: `env:NAME` values and the documented overrides are read from here only. */
  env: Record<string, string | undefined>;
  /** Explicit overrides (CLI flags); applied last. */
  overrides?: ConfigOverrides;
  /** Working directory for relative ORCH_DATA_DIR and the default data dir; default process.cwd(). */
  cwd?: string;
  /** Host name for the default node id `node-<hostname>`; default os.hostname(). */
  hostname?: string;
}

export function loadNodeConfig(options: LoadNodeConfigOptions): NodeConfig {
  const cwd = path.resolve(options.cwd ?? process.cwd());
  const file = options.file === undefined || options.file === '' ? undefined : path.resolve(cwd, options.file);
  const text = options.text ?? (file === undefined ? undefined : readConfigFile(file));
  const parsed = text === undefined ? undefined : readDocument(text, file ?? '<config>', options.env);

  const config = withDefaults(parsed, {
    hostname: options.hostname ?? os.hostname(),
    baseDir: file ? path.dirname(file) : cwd,
    cwd,
  });
  applyEnvOverrides(config, options.env, cwd);
  applyOverrides(config, options.overrides ?? {}, cwd);
  // metadata.name defaults to the node id as finally decided, after ORCH_NODE_ID and flags.
  config.name = parsed?.metadata?.name ?? config.node.id;
  return config;
}

function readConfigFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a directory' : (cause as Error).message;
    throw new ConfigError(undefined, `cannot read ${file}: ${why}`, { cause });
  }
}

/** An empty (or comments-only) document is the same as no file: all defaults. */
function readDocument(text: string, source: string, env: Record<string, string | undefined>): NodeConfigFile | undefined {
  const raw = parseConfigYaml(text, source);
  if (raw === null || raw === undefined) return undefined;
  const { doc, refs } = resolveEnvRefs(raw, env);
  const file = validateConfigFile(doc, refs);
  checkConfigFile(file, refs);
  return file;
}
