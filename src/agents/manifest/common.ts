// What the agent and the workflow manifest parsers share: the YAML syntax pass (errors with their line) and the
// wording of JSON Schema (ajv) errors as `{ field, message }` with dotted field paths. Each parser keeps what is its
// own: which scalars keep their text, and the words for a failed `pattern`.
import type { ErrorObject } from 'ajv';
import { LineCounter, parseDocument, type Document } from 'yaml';
import { keyOf } from '../../config/paths.ts';
import { MANIFEST_LIMITS, scanLimits, walkLimits } from './yaml-limits.ts';
import { firstNul } from '../../util/no-nul.ts';

export interface FieldError {
  field: string;
  message: string;
}

/**
 * Parses one YAML document within MANIFEST_LIMITS (yaml-limits.ts: size, nodes, aliases and flow nesting counted
 * before composing; depth and duplicate keys after); on syntax errors answers the first three, each with its
 * 1-based line.
 */
export function parseYamlDocument(text: string): { ok: true; doc: Document } | { ok: false; errors: (FieldError & { line: number })[] } {
  const over = scanLimits(text);
  if (over) return { ok: false, errors: [{ field: '(root)', message: over.message, line: 1 }] };
  const lines = new LineCounter();
  // uniqueKeys is off: the parser's own check is quadratic in the keys of a mapping; walkLimits does it linearly.
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: false, lineCounter: lines });
  if (doc.errors.length === 0) {
    const bad = walkLimits(doc);
    if (bad) {
      const line = lines.linePos(bad.offset).line;
      return { ok: false, errors: [{ field: '(root)', message: `invalid YAML at line ${line}: ${bad.message}`, line }] };
    }
  }
  if (doc.errors.length > 0) {
    // One mistake cascades into many parser errors; the first few are what helps.
    return {
      ok: false,
      errors: doc.errors.slice(0, 3).map((e) => {
        const line = lines.linePos(e.pos[0]).line;
        return { field: '(root)', message: `invalid YAML at line ${line}: ${e.message.split('\n')[0] ?? e.message}`, line };
      }),
    };
  }
  return { ok: true, doc };
}

/**
 * The document as plain values. Aliases expand here; a document whose aliases would expand beyond
 * MANIFEST_LIMITS.maxAliases references (an alias bomb) is a field error, not an exception.
 */
export function yamlValue(doc: Document): { ok: true; value: unknown } | { ok: false; errors: FieldError[] } {
  try {
    const value: unknown = doc.toJS({ maxAliasCount: MANIFEST_LIMITS.maxAliases });
    // YAML's "\0" escape (or a JSON body's \u0000) makes a NUL, which no store can keep (util/no-nul.ts).
    const nul = firstNul(value, '');
    if (nul !== undefined) return { ok: false, errors: [{ field: nul.replace(/^\./, '') || '(root)', message: 'must not contain NUL (\\0) characters' }] };
    return { ok: true, value };
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return { ok: false, errors: [{ field: '(root)', message: `YAML aliases expand too far (${why.split('\n')[0] ?? why})` }] };
  }
}

/** ajv errors → field errors; `patternMessage(pointer, pattern)` words a failed `pattern`. Duplicates are dropped. */
export function schemaErrors(errors: readonly ErrorObject[], patternMessage: (pointer: string, pattern: string) => string): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    const p = e.params as Record<string, unknown>;
    switch (e.keyword) {
      case 'if': // the `then` branch reported the real problem
        continue;
      case 'required':
        out.push({ field: keyOf(`${e.instancePath}/${String(p.missingProperty)}`), message: 'is required' });
        continue;
      case 'additionalProperties':
        out.push({ field: keyOf(`${e.instancePath}/${String(p.additionalProperty)}`), message: 'is not a known field' });
        continue;
      case 'enum':
        out.push({ field: keyOf(e.instancePath), message: `must be one of ${(p.allowedValues as unknown[]).map(String).join(', ')}` });
        continue;
      case 'const':
        out.push({ field: keyOf(e.instancePath), message: `must be ${JSON.stringify(p.allowedValue)}` });
        continue;
      case 'type':
        out.push({ field: keyOf(e.instancePath), message: `must be ${typeWords(String(p.type))}` });
        continue;
      case 'pattern':
        out.push({ field: keyOf(e.instancePath), message: patternMessage(e.instancePath, String(p.pattern)) });
        continue;
      default:
        out.push({ field: keyOf(e.instancePath), message: e.message ?? 'is invalid' });
    }
  }
  // allErrors can report the same thing twice (e.g. through two `then` branches); keep the first of each.
  const seen = new Set<string>();
  return out.filter((e) => {
    const k = `${e.field}\u0000${e.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** ajv's type names in words: `object` is a mapping, `array` a list. */
function typeWords(t: string): string {
  return t
    .split(',')
    .map((x) => (x === 'object' ? 'a mapping' : x === 'array' ? 'a list' : x === 'integer' ? 'an integer' : `a ${x}`))
    .join(' or ');
}
