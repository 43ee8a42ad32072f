// `env:NAME` values: any string value that is exactly `env:NAME` is replaced by the environment variable NAME.
// An unset (or empty) variable makes the key absent, so optional keys fall back to their defaults — e.g.
// `database.url: env:DATABASE_URL` without DATABASE_URL means embedded PGlite. Whether an absent key is an
// error is decided later by the schema; the references are remembered so that error can name the variable.
import { ConfigError } from './errors.ts';
import { childPointer, keyOf } from './paths.ts';

const ENV_REF = /^env:([A-Za-z_][A-Za-z0-9_]*)$/;

export interface EnvRef {
  /** The variable's name. */
  name: string;
  /** False when the variable was unset or empty and the key was dropped. */
  set: boolean;
}

/** JSON pointer of each `env:` value → the variable it named. */
export type EnvRefs = Map<string, EnvRef>;

export function resolveEnvRefs(doc: unknown, env: Record<string, string | undefined>): { doc: unknown; refs: EnvRefs } {
  const refs: EnvRefs = new Map();
  const walk = (value: unknown, pointer: string, inArray: boolean): { keep: boolean; value: unknown } => {
    if (typeof value === 'string') {
      const m = ENV_REF.exec(value);
      if (!m?.[1]) return { keep: true, value };
      const name = m[1];
      const v = env[name];
      const set = v !== undefined && v !== '';
      refs.set(pointer, { name, set });
      // A list has no "absent" position: dropping the item would silently shift its neighbours.
      if (!set && inArray) throw new ConfigError(keyOf(pointer), `environment variable ${name} is not set`);
      return { keep: set, value: v };
    }
    if (Array.isArray(value)) return { keep: true, value: value.map((item, i) => walk(item, childPointer(pointer, i), true).value) };
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, item] of Object.entries(value)) {
        const r = walk(item, childPointer(pointer, k), false);
        if (r.keep) out[k] = r.value;
      }
      return { keep: true, value: out };
    }
    return { keep: true, value };
  };
  return { doc: walk(doc, '', false).value, refs };
}
