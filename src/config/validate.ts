// Schema validation with one-line messages that name the dotted key. Values that came from `env:NAME` are
// strings; where the schema wants a number or boolean they are converted (so `port: env:PORT` works) — only
// those values, so a quoted `port: "8080"` written in the file is still a type error.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { ConfigError } from './errors.ts';
import type { EnvRefs } from './env-refs.ts';
import { childPointer, keyOf, setAt } from './paths.ts';
import { nodeConfigSchema, type NodeConfigFile } from './schema.ts';

let compiled: ValidateFunction | undefined;

function validator(): ValidateFunction {
  if (!compiled) {
    // allErrors off: the first problem is reported, which is all a one-line message can carry.
    const ajv = new Ajv({ allErrors: false, strict: true, verbose: true });
    ajv.addKeyword('x-expect');
    compiled = ajv.compile(nodeConfigSchema);
  }
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
