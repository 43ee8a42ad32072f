// The Handlebars helpers of seed 002 (length, upper, lower, trim, json, first_line, default) and how a value
// becomes text. Objects and arrays render as JSON text, never "[object Object]"; null renders as the empty
// string (a key that exists with a null value is not missing).
import { parseJsonText } from './lookup.ts';

/** An unresolved path handed to a value helper; the helper renders the placeholder instead of transforming it. */
export class MissingValue {
  constructor(readonly placeholder: string) {}
  toString(): string {
    return this.placeholder;
  }
}

export function toText(value: unknown): string {
  if (value instanceof MissingValue) return value.placeholder;
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return String(value);
  }
}

type Helper = (...args: unknown[]) => unknown;

/** Handlebars passes its `options` object as the last argument; the helpers below take only the values before it. */
function values(args: unknown[]): unknown[] {
  return args.slice(0, -1);
}

function textHelper(transform: (text: string) => string): Helper {
  return (...args) => {
    const [value] = values(args);
    if (value instanceof MissingValue) return value.placeholder;
    return transform(toText(value));
  };
}

export const templateHelpers: Record<string, Helper> = {
  /** Items of an array, characters of a string, keys of an object; 0 for anything else. */
  length: (...args) => {
    const [value] = values(args);
    if (value instanceof MissingValue) return value.placeholder;
    if (typeof value === 'string' || Array.isArray(value)) return value.length;
    if (value !== null && typeof value === 'object') return Object.keys(value).length;
    return 0;
  },
  upper: textHelper((s) => s.toUpperCase()),
  lower: textHelper((s) => s.toLowerCase()),
  trim: textHelper((s) => s.trim()),
  first_line: textHelper((s) => s.split(/\r?\n/, 1)[0] ?? ''),
  /** Pretty-printed JSON (two spaces). A string that is JSON text is pretty-printed as the value it encodes. */
  json: (...args) => {
    const [value] = values(args);
    if (value instanceof MissingValue) return value.placeholder;
    if (value === undefined) return 'null';
    const decoded = typeof value === 'string' ? parseJsonText(value) : undefined;
    try {
      return JSON.stringify(decoded ?? value, null, 2);
    } catch {
      return toText(value);
    }
  },
  /** `{{default value "fallback"}}`: the fallback when the value is missing, null or the empty string. */
  default: (...args) => {
    const [value, fallback] = values(args);
    if (value === undefined || value === null || value === '' || value instanceof MissingValue) return fallback ?? '';
    return value;
  },
};

/** Helpers whose path arguments become a MissingValue (rendering the placeholder) rather than undefined. */
export const VALUE_HELPERS: ReadonlySet<string> = new Set(['length', 'upper', 'lower', 'trim', 'json', 'first_line']);
