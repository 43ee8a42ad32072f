// Rules one schema keyword cannot say: either/or keys, names that must be unique within a list, the controller list,
// templates that must parse.
import { checkTemplate } from '../workflow/template/render.ts';
import { parseControllers } from './controllers.ts';
import { parseNodeKey } from './node-keys.ts';
import { ConfigError } from './errors.ts';
import type { EnvRefs } from './env-refs.ts';
import { pointerOf } from './paths.ts';
import type { NodeConfigFile } from './schema.ts';

export function checkConfigFile(file: NodeConfigFile, refs: EnvRefs): void {
  const s = file.spec;
  if (!s) return;
  if (s.auth) {
    if (s.auth.jwks_url && s.auth.jwks_file) throw new ConfigError('spec.auth', 'set only one of jwks_url and jwks_file');
    if (!s.auth.jwks_url && !s.auth.jwks_file) {
      for (const k of ['jwks_url', 'jwks_file']) {
        const ref = refs.get(pointerOf(['spec', 'auth', k]));
        if (ref && !ref.set) throw new ConfigError(`spec.auth.${k}`, `required, but environment variable ${ref.name} is not set`);
      }
      throw new ConfigError('spec.auth', 'must set jwks_url or jwks_file (remove the auth section for dev identity mode)');
    }
  }
  if (s.cluster?.controller !== undefined) parseControllers(s.cluster.controller, 'spec.cluster.controller');
  // A secret written into the file ends up in backups, diffs and `orch config` output: it must come from the environment.
  if (s.cluster?.join_token !== undefined && !refs.has(pointerOf(['spec', 'cluster', 'join_token']))) {
    throw new ConfigError('spec.cluster.join_token', 'must be an env:NAME reference (the token is a secret: keep it out of the file), or set ORCH_CLUSTER_JOIN_TOKEN');
  }
  s.cluster?.allowed_node_keys?.forEach((k, i) => parseNodeKey(k, `spec.cluster.allowed_node_keys[${i}]`));
  unique('spec.llm_providers', s.llm_providers, (p) => p.name, 'name');
  unique('spec.builtin_dispatchers', s.builtin_dispatchers, (d) => d.name, 'name');
  unique('spec.mcp_servers', s.mcp_servers, (m) => m.name, 'name');
  unique('spec.stimuli.routes', s.stimuli?.routes, (r) => r.source, 'source');
  // A template that does not parse would render `<template error: ...>` as every delivery's input: refuse it here.
  s.stimuli?.routes?.forEach((r, i) => {
    const why = r.input_template === undefined ? undefined : checkTemplate(r.input_template);
    if (why !== undefined) throw new ConfigError(`spec.stimuli.routes[${i}].input_template`, `does not parse: ${why}`);
  });
  s.mcp_servers?.forEach((m, i) => {
    const transport = m.transport ?? (m.url ? 'http' : 'stdio');
    if (transport === 'stdio' && !m.command) throw new ConfigError(`spec.mcp_servers[${i}].command`, 'is required for the stdio transport');
    if (transport === 'http' && !m.url) throw new ConfigError(`spec.mcp_servers[${i}].url`, 'is required for the http transport');
  });
}

function unique<T>(key: string, items: T[] | undefined, id: (item: T) => string, field: string): void {
  const seen = new Set<string>();
  items?.forEach((item, i) => {
    const v = id(item);
    if (seen.has(v)) throw new ConfigError(`${key}[${i}].${field}`, `duplicate ${field} "${v}"`);
    seen.add(v);
  });
}
