// Query-string parsing shared by the list and log routes. Integers are decimal digits only (no `1e20`, `0x10`,
// signs or spaces) within a range, so a value the database cannot hold (an offset of 9223372036854775808) is the
// caller's 400 naming the parameter, never a failed query.
import { Errors, OrchError } from '../../errors/catalog.ts';

/** The largest offset any list accepts: far beyond any real list, well inside PostgreSQL's bigint. */
export const MAX_OFFSET = 1_000_000_000;

const DIGITS = /^\d{1,16}$/;

/**
 * An optional integer from the query string in [min, max] (default 0 … MAX_OFFSET); 400 naming it otherwise.
 * Routes whose limit clamps (`limit=1000` answers 200 rows) pass the clamp's own maximum only where the docs state
 * the range as a rule.
 */
export function intParam(v: string | undefined, name: string, range: { min?: number; max?: number } = {}): number | undefined {
  if (v === undefined) return undefined;
  const min = range.min ?? 0;
  const max = range.max ?? MAX_OFFSET;
  const n = DIGITS.test(v) ? Number(v) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new OrchError(Errors.BAD_REQUEST, `${name} must be an integer from ${min} to ${max}`);
  return n;
}
