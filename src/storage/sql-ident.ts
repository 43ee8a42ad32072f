// Table and column names cannot be bound as parameters, so the few helpers that take them interpolate them; this
// check keeps that from ever being an injection point.
import { Errors, OrchError } from '../errors/catalog.ts';

const IDENT = /^[a-z_][a-z0-9_]*$/;

export function ident(name: string): string {
  if (!IDENT.test(name)) throw new OrchError(Errors.INTERNAL, `not a safe SQL identifier: ${JSON.stringify(name)}`);
  return name;
}

/** `now() + ttl` in SQL, the ttl bound as parameter number `n` (in milliseconds). */
export function expiresIn(n: number): string {
  return `now() + ($${n}::INT * INTERVAL '1 millisecond')`;
}

export function ttlParam(ttlMs: number): number {
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new OrchError(Errors.INTERNAL, `lease ttl must be positive: ${ttlMs}`);
  return Math.round(ttlMs);
}
