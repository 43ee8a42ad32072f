// Regular expressions that tenants and agents supply — JSON Schema `pattern`s in input and validation schemas,
// fs.grep patterns — run on RE2's linear-time engine (re2js, a pure-JavaScript port: no native build). V8's engine
// backtracks: `(a+)+$` over a 29-byte string took 13.4 s, `(a|aa)+$` over a long one is as bad, and on the main
// thread that freezes the whole node (issue 14). RE2 answers in time linear in the input whatever the pattern.
//
// The price is RE2's syntax: no lookahead / lookbehind, no backreferences. Such a pattern is refused where it is
// compiled (a schema at deploy: 422 naming the field; fs.grep: InvalidArguments) with a message that says so.
// JavaScript-only spellings (`(?<name>…)`, `\/`, `\u{…}`) are translated by RE2JS.translateRegExp.
import { RE2JS } from 're2js';

/** The longest pattern accepted; compiling a very long pattern costs memory and time before any input is read. */
export const MAX_PATTERN_LENGTH = 1024;

export class UnsupportedPatternError extends Error {
  override readonly name = 'UnsupportedPatternError';
}

/** What ajv (code.regExp) and the grep loop need of a compiled pattern. */
export interface LinearRegExp {
  test(input: string): boolean;
}

const FLAGS: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, s: RE2JS.DOTALL, m: RE2JS.MULTILINE, u: 0, g: 0, y: 0 };

/** Compiles `pattern` for RE2 with the JavaScript `flags` (i, s, m; u is RE2's default). Throws
 * UnsupportedPatternError with a readable reason when it is too long or uses what RE2 cannot run. */
export function linearRegExp(pattern: string, flags = ''): LinearRegExp {
  if (pattern.length > MAX_PATTERN_LENGTH) throw new UnsupportedPatternError(`pattern is longer than ${MAX_PATTERN_LENGTH} characters`);
  let bits = 0;
  for (const f of flags) {
    const bit = FLAGS[f];
    if (bit === undefined) throw new UnsupportedPatternError(`regular expression flag ${JSON.stringify(f)} is not supported`);
    bits |= bit;
  }
  try {
    return RE2JS.compile(RE2JS.translateRegExp(pattern), bits);
  } catch (err) {
    const why = err instanceof Error ? err.message.replace(/^error parsing regexp: /, '') : String(err);
    throw new UnsupportedPatternError(`pattern ${JSON.stringify(pattern.slice(0, 80))} is not accepted: ${why} ` +
      '(patterns run on a linear-time engine, RE2: no lookahead, lookbehind or backreferences)');
  }
}
