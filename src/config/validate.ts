// Schema validation with one-line messages that name the dotted key. Values that came from `env:NAME` are
// strings; where the schema wants a number or boolean they are converted (so `port: env:PORT` works) — only
// those values, so a quoted `port: "8080"` written in the file is still a type error.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { ConfigError } from './errors.ts';
import type { EnvRefs } from './env-refs.ts';
import { childPointer, keyOf, setAt } from './paths.ts';
import type { NodeConfigFile } from './schema.ts';
import { compileConfigValidator, configSchemaHash } from './validator-source.ts';
import { SCHEMA_HASH, validate as generated } from './validator.gen.js';

let compiled: ValidateFunction | undefined;

/**
 * The validator generated at build time (scripts/gen-validators.mjs: no ajv compile at start, issue 15 item 4) when it
 * was made from this schema, else compiled here as before; check:gen fails on a stale file.
 */
function validator(): ValidateFunction {
  compiled ??= SCHEMA_HASH === configSchemaHash() ? generated : compileConfigValidator();
  return compiled;
}

export function validateConfigFile(doc: unknown, refs: EnvRefs): NodeConfigFile {
  const validate = validator();
  // Each pass converts at most one env-sourced value, so this terminates after refs.size + 1 passes.
  for (let pass = 0; pass <= refs.size; pass++) {
    if (validate(doc)) return doc as NodeConfigFile;
    const err = validate.errors?.[0];
    if (!err) break;
    const ref = refs.get(err.instancePath);
    if (err.keyword === 'type' && ref?.set) {
      const converted = convert(err.data, String(err.params.type));
      if (converted !== undefined) {
        setAt(doc, err.instancePath, converted);
        continue;
      }
    }
    throw toConfigError(err, refs);
  }
  throw new ConfigError(undefined, 'invalid configuration');
}

function convert(value: unknown, type: string): number | boolean | undefined {
  if (typeof value !== 'string') return undefined;
  const s = value.trim();
  if (type === 'integer' && /^-?\d+$/.test(s)) return Number(s);
  if (type === 'number' && /^-?\d+(\.\d+)?$/.test(s)) return Number(s);
  if (type === 'boolean' && (s === 'true' || s === 'false')) return s === 'true';
  return undefined;
}

function toConfigError(err: ErrorObject, refs: EnvRefs): ConfigError {
  const p = err.params as Record<string, unknown>;
  if (err.keyword === 'additionalProperties') {
    return new ConfigError(keyOf(childPointer(err.instancePath, String(p.additionalProperty))), 'unknown key');
  }
  if (err.keyword === 'required') {
    const pointer = childPointer(err.instancePath, String(p.missingProperty));
    const ref = refs.get(pointer);
    return new ConfigError(keyOf(pointer), ref && !ref.set ? `required, but environment variable ${ref.name} is not set` : 'is required');
  }
  const ref = refs.get(err.instancePath);
  const from = ref ? ` (value from environment variable ${ref.name})` : '';
  return new ConfigError(keyOf(err.instancePath), `${describe(err)}${from}`);
}

function describe(err: ErrorObject): string {
  const p = err.params as Record<string, unknown>;
  switch (err.keyword) {
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'const':
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case 'type':
      return p.type === 'object' ? 'must be a mapping' : p.type === 'array' ? 'must be a list' : `must be ${String(p.type)}`;
    case 'pattern': {
      const expect = (err.parentSchema as Record<string, unknown> | undefined)?.['x-expect'];
      return typeof expect === 'string' ? `must be ${expect}` : (err.message ?? 'invalid value');
    }
    default:
      return err.message ?? 'invalid value';
  }
}
