// Query-string parsing shared by the list and log routes.
import { Errors, OrchError } from '../../errors/catalog.ts';

/** An optional non-negative integer from the query string (limit, offset, after …); 400 naming it otherwise. */
export function intParam(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new OrchError(Errors.BAD_REQUEST, `${name} must be a non-negative integer`);
  return n;
}
