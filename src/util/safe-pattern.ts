// Tenant-supplied JSON Schema `pattern`s (workflow and agent input schemas, validation schemas) are compiled by ajv
// and run on the main thread for every payload. A pattern with a repeated group that itself repeats (`(a+)+$`,
// `(\w+\s?)*`) backtracks exponentially: one request could hold the event loop for minutes (issue 14). Such
// patterns are refused when the schema is compiled (at deploy: a 422 naming the field), so none reaches a run.
// The check is syntactic and conservative: a group that contains a quantifier may not itself be repeated.

/** The longest pattern a tenant schema may carry. */
export const MAX_PATTERN_LENGTH = 1024;

export class UnsafePatternError extends Error {}

interface Frame {
  /** A quantifier (`*`, `+`, `?`, `{…}`) stands somewhere inside the group. */
  quantified: boolean;
}

/** Length of the quantifier at `i` (0 when none) and whether it repeats (may match its atom more than once). */
function quantifierAt(p: string, i: number): { length: number; repeats: boolean } {
  const c = p[i];
  if (c === '*' || c === '+') return { length: p[i + 1] === '?' ? 2 : 1, repeats: true };
  if (c === '?') return { length: p[i + 1] === '?' ? 2 : 1, repeats: false };
  if (c === '{') {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(p.slice(i));
    if (!m) return { length: 0, repeats: false };
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
    const lazy = p[i + m[0].length] === '?' ? 1 : 0;
    return { length: m[0].length + lazy, repeats: max > 1 };
  }
  return { length: 0, repeats: false };
}

/** Throws UnsafePatternError when `pattern` is too long or repeats a group that contains a quantifier. */
export function assertSafePattern(pattern: string): void {
  if (pattern.length > MAX_PATTERN_LENGTH) throw new UnsafePatternError(`pattern is longer than ${MAX_PATTERN_LENGTH} characters`);
  const stack: Frame[] = [{ quantified: false }];
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i]!;
    const top = stack[stack.length - 1]!;
    if (c === '\\') {
      i += 2;
    } else if (c === '[') {
      // A character class is one atom: skip to its closing bracket (escapes included; a leading `]` is literal).
      i++;
      if (pattern[i] === '^') i++;
      if (pattern[i] === ']') i++;
      while (i < pattern.length && pattern[i] !== ']') i += pattern[i] === '\\' ? 2 : 1;
      i++;
    } else if (c === '(') {
      stack.push({ quantified: false });
      i++;
      if (pattern[i] === '?') {
        // (?: (?= (?! (?<= (?<! (?<name> — the prefix is not an atom of its own.
        const m = /^\?(?::|=|!|<=|<!|<[A-Za-z_$][\w$]*>)/.exec(pattern.slice(i));
        i += m ? m[0].length : 1;
      }
      continue;
    } else if (c === ')') {
      if (stack.length === 1) throw new UnsafePatternError('unbalanced parenthesis');
      const group = stack.pop()!;
      const q = quantifierAt(pattern, i + 1);
      if (q.repeats && group.quantified) {
        throw new UnsafePatternError(`a repeated group contains a quantifier (at character ${i + 1}): it can backtrack exponentially`);
      }
      const parent = stack[stack.length - 1]!;
      parent.quantified ||= group.quantified || q.length > 0;
      i += 1 + q.length;
      continue;
    } else {
      i++;
    }
    // After an atom: a quantifier marks the enclosing group.
    const q = quantifierAt(pattern, i);
    if (q.length > 0) {
      top.quantified = true;
      i += q.length;
    }
  }
  if (stack.length !== 1) throw new UnsafePatternError('unbalanced parenthesis');
}

/** The RegExp maker for ajv's `code.regExp`: refuses unsafe patterns at schema compile time. */
export function guardedRegExp(pattern: string, flags: string): RegExp {
  try {
    assertSafePattern(pattern);
  } catch (err) {
    if (err instanceof UnsafePatternError) throw new Error(`pattern ${JSON.stringify(pattern.slice(0, 80))} is refused: ${err.message}`);
    throw err;
  }
  return new RegExp(pattern, flags);
}
