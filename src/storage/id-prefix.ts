// Prefix search by id for the list routes (`id_prefix=0a1b2c3d`): the first characters of a UUID as a closed range
// on the primary key, `id BETWEEN low AND high`, so the lookup is an index range scan (PostgreSQL and CockroachDB
// alike) however many rows the table holds — never a LIKE over id::TEXT, which no index serves.
import { Errors, OrchError } from '../errors/catalog.ts';

const HEX = /^[0-9a-f]{1,32}$/;

function dashed(hex32: string): string {
  return `${hex32.slice(0, 8)}-${hex32.slice(8, 12)}-${hex32.slice(12, 16)}-${hex32.slice(16, 20)}-${hex32.slice(20)}`;
}

/**
 * The UUID range a typed prefix covers: hex digits, hyphens where the canonical form has them (or left out),
 * any case. Throws BAD_REQUEST (400) for anything else.
 */
export function uuidPrefixRange(prefix: string): { low: string; high: string } {
  const typed = prefix.trim().toLowerCase();
  const hex = typed.replaceAll('-', '');
  // Hyphens only where the canonical text has them (after 8, 12, 16 and 20 hex digits).
  const canonical = dashed(hex.padEnd(32, '0')).slice(0, typed.length);
  if (!HEX.test(hex) || (typed.includes('-') && canonical !== typed)) {
    throw new OrchError(Errors.BAD_REQUEST, 'id_prefix must be the first 1 to 36 characters of an id (hex digits and its hyphens)');
  }
  return { low: dashed(hex.padEnd(32, '0')), high: dashed(hex.padEnd(32, 'f')) };
}
