// NUL (U+0000) in caller-supplied text. PostgreSQL text and jsonb cannot store it, so a NUL that reaches a query fails
// there (`invalid byte sequence for encoding "UTF8": 0x00`) as a 500. Every edge (HTTP, gRPC, webhooks, manifests)
// refuses it instead, naming the field.
import { Errors, OrchError } from '../errors/catalog.ts';

/** The path of the first string (value or key) holding a NUL, e.g. `body.input.note`; undefined when none does. */
export function firstNul(value: unknown, root: string): string | undefined {
  const stack: { v: unknown; path: string }[] = [{ v: value, path: root }];
  while (stack.length > 0) {
    const { v, path } = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return path;
    } else if (Array.isArray(v)) {
      v.forEach((item, i) => stack.push({ v: item, path: `${path}[${i}]` }));
    } else if (typeof v === 'object' && v !== null && !Buffer.isBuffer(v) && !(v instanceof Uint8Array)) {
      for (const [k, item] of Object.entries(v)) {
        if (k.includes('\u0000')) return `${path} key ${JSON.stringify(k)}`;
        stack.push({ v: item, path: `${path}.${k}` });
      }
    }
  }
  return undefined;
}

/** 400 (gRPC INVALID_ARGUMENT) naming the field when any string in `value` holds a NUL. */
export function refuseNul(value: unknown, root: string): void {
  const at = firstNul(value, root);
  if (at !== undefined) throw new OrchError(Errors.BAD_REQUEST, `${at} must not contain NUL (\\u0000) characters`);
}
