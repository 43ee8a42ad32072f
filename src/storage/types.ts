// What column values look like in JS, the same on both adapters (the conformance tests hold them to it):
//   TIMESTAMPTZ -> Date, JSON/JSONB -> parsed value, INT/SMALLINT -> number, BIGINT/INT8 and NUMERIC -> string
//   (a BIGINT can exceed 2^53). Declare counters and sequence numbers INT4 and cast a count(*) with ::INT4: INT4
//   means 32 bits on all three engines, whereas on CockroachDB a bare INT is INT8 and would come back a string.
// Parameters: pass JSONB values as JSON.stringify(value). pg turns a JS array parameter into a PostgreSQL array
// literal, which is not JSON, so a bare array works on PGlite and fails on PostgreSQL.
// pg's own parser set is in pg-types.ts: a node on PGlite does not load pg (issue 15 item 4: start-up).

export const OID = {
  INT8: 20,
  JSON: 114,
  TIMESTAMPTZ: 1184,
  JSONB: 3802,
} as const;

/** A text value as it is (INT8 stays a string on both adapters). */
export const identity = (value: string): string => value;

/** Overrides for PGlite's parsers: it turns INT8 into a JS number by default, which could lose precision. */
export const pgliteParsers: Record<number, (value: string) => unknown> = {
  [OID.INT8]: identity,
};
