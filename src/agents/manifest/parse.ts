// YAML text → validated, defaulted AgentManifest, or every problem found, each naming its field (a dotted path such
// as `spec.runtime.language`, `spec.tools[2]`). Three passes: YAML syntax (with the line), the JSON Schema of
// schema.ts (structure, unknown keys), then what a schema cannot say well: known tool names, supported runtime
// pairs, and the unit forms of memory, cpu and timeouts. Defaults are filled in only when everything passed.
import { Ajv, type ValidateFunction } from 'ajv';
import { tenantAjv } from '../../util/tenant-ajv.ts';
import { isMap, isScalar, type Document } from 'yaml';
import { segmentsOf } from '../../config/paths.ts';
import { parseYamlDocument, schemaErrors, yamlValue } from './common.ts';
import { KNOWN_TOOLS } from './known-tools.ts';
import { CUSTOM_LANGUAGE, isSupportedRuntime, languages, versionsOf } from './runtimes.ts';
import { agentManifestSchema, type AgentManifestFile } from './schema.ts';
import type { AgentManifest, ManifestError, ToolSpec, ValidationRule, VolumeSpec } from './types.ts';

export type ParseResult = { ok: true; manifest: AgentManifest } | { ok: false; errors: ManifestError[] };

export const DEFAULTS = {
  isolation: 'inherit',
  image_pull_policy: 'IfNotPresent',
  model: 'default',
  mode: 'one-shot',
  iterative_max_iterations: 5,
  max_iterations_cap: 20,
  llm_timeout_seconds: 120,
  iteration_timeout: 300,
  resources_timeout: 600,
  network_mode: 'none',
  semantic_min_score: 0.7,
  exit_code_expected: 0,
} as const;

let compiled: ValidateFunction | undefined;

function validator(): ValidateFunction {
  compiled ??= new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(agentManifestSchema);
  return compiled;
}

// ---------------------------------------------------------------------------------------------------------------
// Unit forms

const MEMORY_UNITS: Record<string, number> = {
  '': 1,
  k: 1e3,
  K: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
};

/** `512Mi`, `1Gi`, `256M`, `1.5G`, `1048576` (bytes) → bytes; undefined when the form is not one of these. */
export function parseMemory(v: string | number): number | undefined {
  if (typeof v === 'number') return Number.isInteger(v) && v > 0 ? v : undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(|k|K|M|G|T|Ki|Mi|Gi|Ti)(?:B)?\s*$/.exec(v);
  if (!m) return undefined;
  const bytes = Math.round(Number(m[1]) * MEMORY_UNITS[m[2]!]!);
  return bytes > 0 ? bytes : undefined;
}

/**
 * cpu → millicores. `500m` is millicores; a plain number (or numeric string) below 100 is cores (`0.5`, `2`), and
 * 100 and above is already millicores (`1500`), since nobody means 100 cores or a tenth of a millicore.
 */
export function parseCpu(v: string | number): number | undefined {
  let n: number;
  if (typeof v === 'number') n = v;
  else {
    const s = v.trim();
    const milli = /^(\d+)m$/.exec(s);
    if (milli) return Number(milli[1]) > 0 ? Number(milli[1]) : undefined;
    if (!/^\d+(\.\d+)?$/.test(s)) return undefined;
    n = Number(s);
  }
  if (!Number.isFinite(n) || n <= 0) return undefined;
  const millicores = n < 100 ? Math.round(n * 1000) : n;
  return Number.isInteger(millicores) && millicores > 0 ? millicores : undefined;
}

const DURATION_UNITS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };

/** Seconds: a positive number, or `30s`, `5m`, `1h`, `500ms`, `90` (seconds). */
export function parseDuration(v: string | number): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) && v > 0 ? v : undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(v);
  if (!m) return undefined;
  const seconds = Number(m[1]) * DURATION_UNITS[m[2] ?? 's']!;
  return seconds > 0 ? seconds : undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Errors

function patternMessage(pointer: string, pattern: string): string {
  const segs = segmentsOf(pointer);
  const last = segs[segs.length - 1];
  if (last === 'name') return 'must be a lowercase DNS-like name: a-z, 0-9 and "-", starting and ending with a letter or digit, at most 63 characters';
  if (last === 'version') return 'must be a version such as 1.0.0 (letters, digits, ".", "_", "+", "-")';
  if (last === 'mount_path') return 'must be an absolute path';
  return `must match ${pattern}`;
}

// ---------------------------------------------------------------------------------------------------------------
// YAML

/**
 * Scalars that must be strings but that YAML reads as numbers or booleans lose their spelling (`version: 3.10`
 * is the float 3.1). Where the schema wants a string, take the text exactly as written.
 */
function keepScalarText(doc: Document, text: string): void {
  const asText = (path: (string | number)[]): void => {
    const node = doc.getIn(path, true);
    if (isScalar(node) && (typeof node.value === 'number' || typeof node.value === 'boolean') && node.range) {
      node.value = text.slice(node.range[0], node.range[1]).trim();
    }
  };
  asText(['metadata', 'version']);
  asText(['spec', 'runtime', 'version']);
  // Each value is taken from its own pair: looking every key up by path again would be quadratic in the keys.
  for (const mapPath of [['metadata', 'labels'], ['metadata', 'annotations'], ['spec', 'env']]) {
    const map = doc.getIn(mapPath, true);
    if (!isMap(map)) continue;
    for (const item of map.items) {
      const node = item.value;
      if (isScalar(item.key) && typeof item.key.value === 'string' && isScalar(node) && (typeof node.value === 'number' || typeof node.value === 'boolean') && node.range) {
        node.value = text.slice(node.range[0], node.range[1]).trim();
      }
    }
  }
}

function parseYaml(text: string): { ok: true; value: unknown } | { ok: false; errors: ManifestError[] } {
  const parsed = parseYamlDocument(text);
  if (!parsed.ok) return parsed;
  keepScalarText(parsed.doc, text);
  return yamlValue(parsed.doc);
}

// ---------------------------------------------------------------------------------------------------------------
// The raw document after the schema passed (shapes are known, optional parts may be absent): the schema's own type

type Raw = AgentManifestFile;

function semantic(raw: Raw, errors: ManifestError[]): AgentManifest | undefined {
  const spec = raw.spec;
  const err = (field: string, message: string): undefined => {
    errors.push({ field, message });
    return undefined;
  };

  // runtime
  const rt = spec.runtime;
  if (rt.language === CUSTOM_LANGUAGE) {
    if (rt.image === undefined) err('spec.runtime.image', 'is required when spec.runtime.language is custom');
  } else if (!languages().includes(rt.language)) {
    err('spec.runtime.language', `unsupported language "${rt.language}"; supported: ${[...languages(), CUSTOM_LANGUAGE].join(', ')} (custom needs spec.runtime.image)`);
  } else if (rt.version === undefined) {
    err('spec.runtime.version', `is required; supported versions of ${rt.language}: ${versionsOf(rt.language).join(', ')}`);
  } else if (!isSupportedRuntime(rt.language, rt.version)) {
    err('spec.runtime.version', `unsupported ${rt.language} version "${rt.version}"; supported: ${versionsOf(rt.language).join(', ')}`);
  }

  // execution
  const ex = spec.execution ?? {};
  const mode = ex.mode ?? DEFAULTS.mode;
  // One-shot runs once whatever max_iterations says; iterative is capped at 20.
  const maxIterations =
    mode === 'one-shot' ? 1 : Math.min(ex.max_iterations ?? DEFAULTS.iterative_max_iterations, DEFAULTS.max_iterations_cap);
  const seconds = (v: number | string | undefined, field: string, dflt: number): number => {
    if (v === undefined) return dflt;
    const s = parseDuration(v);
    if (s === undefined) {
      err(field, `must be a positive number of seconds or a duration such as 30s, 5m, 1h (got ${JSON.stringify(v)})`);
      return dflt;
    }
    return s;
  };
  const llmTimeout = seconds(ex.llm_timeout_seconds, 'spec.execution.llm_timeout_seconds', DEFAULTS.llm_timeout_seconds);
  const iterationTimeout = seconds(ex.iteration_timeout, 'spec.execution.iteration_timeout', DEFAULTS.iteration_timeout);
  const validation: ValidationRule[] = (ex.validation ?? []).map((r): ValidationRule => {
    if (r.type === 'exit_code') return { type: 'exit_code', expected: r.expected ?? DEFAULTS.exit_code_expected };
    if (r.type === 'semantic') {
      return {
        type: 'semantic',
        judge_agent: r.judge_agent,
        ...(r.criteria !== undefined ? { criteria: r.criteria } : {}),
        min_score: r.min_score ?? DEFAULTS.semantic_min_score,
      };
    }
    return { type: 'json_schema', schema: r.schema };
  });
  validation.forEach((r, i) => {
    if (r.type === 'json_schema') {
      try {
        tenantAjv({ strict: false }).compile(r.schema);
      } catch (e) {
        err(`spec.execution.validation[${i}].schema`, `is not a valid JSON Schema: ${(e as Error).message}`);
      }
    }
  });

  // security
  const sec = spec.security ?? {};
  const res = sec.resources ?? {};
  let cpu: number | undefined;
  if (res.cpu !== undefined) {
    cpu = parseCpu(res.cpu);
    if (cpu === undefined) err('spec.security.resources.cpu', `must be millicores such as "500m", or cores such as 0.5 or 2 (got ${JSON.stringify(res.cpu)})`);
  }
  let memory: number | undefined;
  if (res.memory !== undefined) {
    memory = parseMemory(res.memory);
    if (memory === undefined) err('spec.security.resources.memory', `must be a size such as 512Mi, 1Gi, 256M or a number of bytes (got ${JSON.stringify(res.memory)})`);
  }
  const resTimeout = seconds(res.timeout, 'spec.security.resources.timeout', DEFAULTS.resources_timeout);
  const networkMode = sec.network?.mode ?? DEFAULTS.network_mode;
  const allowlist = sec.network?.allowlist ?? [];

  // volumes
  const volumes: VolumeSpec[] = [];
  const volumeNames = new Set<string>();
  const mountPaths = new Set<string>();
  (spec.volumes ?? []).forEach((v, i) => {
    if (volumeNames.has(v.name)) err(`spec.volumes[${i}].name`, `duplicate volume name "${v.name}"`);
    volumeNames.add(v.name);
    if (mountPaths.has(v.mount_path)) err(`spec.volumes[${i}].mount_path`, `duplicate mount path "${v.mount_path}"`);
    mountPaths.add(v.mount_path);
    if (v.size_limit !== undefined && parseMemory(v.size_limit) === undefined) {
      err(`spec.volumes[${i}].size_limit`, `must be a size such as 512Mi, 1Gi or a number of bytes (got ${JSON.stringify(v.size_limit)})`);
    }
    const { size_limit, ...rest } = v;
    volumes.push({ ...rest, ...(size_limit !== undefined ? { size_limit: String(size_limit) } : {}) });
  });

  // tools
  const tools: ToolSpec[] = [];
  const toolNames = new Set<string>();
  (spec.tools ?? []).forEach((t, i) => {
    const tool: ToolSpec = typeof t === 'string' ? { name: t } : { ...t };
    const field = typeof t === 'string' ? `spec.tools[${i}]` : `spec.tools[${i}].name`;
    if (!KNOWN_TOOLS.has(tool.name)) err(field, `unknown tool "${tool.name}"; built-in tools are fs.*, web.*, cmd.run and orch.* (see orch.tools.list)`);
    if (toolNames.has(tool.name)) err(field, `tool "${tool.name}" is listed twice`);
    toolNames.add(tool.name);
    if (tool.executor !== undefined && !/^(builtin|mcp):[A-Za-z0-9._-]+$/.test(tool.executor)) {
      err(`spec.tools[${i}].executor`, `must be builtin:<name> or mcp:<server> (got "${tool.executor}")`);
    }
    if (tool.config?.subcommand_allowlist !== undefined && tool.name !== 'cmd.run') {
      err(`spec.tools[${i}].config.subcommand_allowlist`, 'applies to cmd.run only');
    }
    tools.push(tool);
  });

  if (spec.input_schema !== undefined) {
    try {
      tenantAjv({ strict: false }).compile(spec.input_schema);
    } catch (e) {
      err('spec.input_schema', `is not a valid JSON Schema: ${(e as Error).message}`);
    }
  }

  if (errors.length > 0) return undefined;

  const runtime: AgentManifest['spec']['runtime'] = {
    language: rt.language,
    version: rt.version ?? '',
    image_pull_policy: rt.image_pull_policy ?? DEFAULTS.image_pull_policy,
    isolation: rt.isolation ?? DEFAULTS.isolation,
    model: rt.model ?? DEFAULTS.model,
    ...(rt.image !== undefined ? { image: rt.image } : {}),
    ...(rt.temperature !== undefined ? { temperature: rt.temperature } : {}),
  };
  const manifest: AgentManifest = {
    apiVersion: raw.apiVersion,
    kind: 'Agent',
    metadata: raw.metadata,
    spec: {
      runtime,
      task: spec.task,
      execution: {
        mode,
        max_iterations: maxIterations,
        llm_timeout_seconds: llmTimeout,
        iteration_timeout: iterationTimeout,
        validation,
        ...(ex.tool_validation !== undefined ? { tool_validation: ex.tool_validation } : {}),
        ...(ex.memory !== undefined ? { memory: ex.memory } : {}),
      },
      security: {
        network: { mode: networkMode, allowlist },
        filesystem: { read: sec.filesystem?.read ?? [], write: sec.filesystem?.write ?? [] },
        resources: {
          ...(cpu !== undefined ? { cpu } : {}),
          ...(memory !== undefined ? { memory_bytes: memory } : {}),
          timeout: resTimeout,
        },
      },
      volumes,
      tools,
      env: spec.env ?? {},
    },
  };
  for (const k of ['security_context', 'input_schema', 'warm_pool_size', 'swarm_enabled', 'startup_script', 'bootstrap_path'] as const) {
    if (spec[k] !== undefined) (manifest.spec as Record<string, unknown>)[k] = spec[k];
  }
  return manifest;
}

/** Parses, validates and defaults an agent manifest. Never throws for bad input; every error names its field. */
export function parseAgentManifest(yamlText: string): ParseResult {
  if (typeof yamlText !== 'string' || yamlText.trim() === '') {
    return { ok: false, errors: [{ field: '(root)', message: 'the manifest is empty' }] };
  }
  const y = parseYaml(yamlText);
  if (!y.ok) return y;
  return validateAgentManifestObject(y.value);
}

/** The same checks for a manifest that is already a JS value (JSON bodies, orch.schema.validate). */
export function validateAgentManifestObject(value: unknown): ParseResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, errors: [{ field: '(root)', message: 'must be a mapping with apiVersion, kind, metadata and spec' }] };
  }
  const validate = validator();
  if (!validate(value)) return { ok: false, errors: schemaErrors(validate.errors ?? [], patternMessage) };
  const errors: ManifestError[] = [];
  const manifest = semantic(structuredClone(value) as Raw, errors);
  return manifest ? { ok: true, manifest } : { ok: false, errors };
}
