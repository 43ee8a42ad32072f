// What column values look like in JS, the same on both adapters (the conformance tests hold them to it):
//   TIMESTAMPTZ -> Date, JSON/JSONB -> parsed value, INT/SMALLINT -> number, BIGINT/INT8 and NUMERIC -> string
//   (a BIGINT can exceed 2^53). Declare counters and sequence numbers INT4 and cast a count(*) with ::INT4: INT4
//   means 32 bits on all three engines, whereas on CockroachDB a bare INT is INT8 and would come back a string.
// Parameters: pass JSONB values as JSON.stringify(value). pg turns a JS array parameter into a PostgreSQL array
// literal, which is not JSON, so a bare array works on PGlite and fails on PostgreSQL.
import pg from 'pg';

export const OID = {
  INT8: 20,
  JSON: 114,
  TIMESTAMPTZ: 1184,
  JSONB: 3802,
} as const;

// Taken once at load so that a global pg.types.setTypeParser elsewhere cannot change what this pool returns.
const parseTimestamptz = pg.types.getTypeParser(OID.TIMESTAMPTZ, 'text');

const identity = (value: string): string => value;

/** The per-pool parser set for `pg`: the library defaults, with the overrides above pinned. */
export const pgTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (format === undefined || format === 'text') {
      switch (oid) {
        case OID.INT8:
          return identity;
        case OID.JSON:
        case OID.JSONB:
          return JSON.parse;
        case OID.TIMESTAMPTZ:
          return parseTimestamptz;
      }
    }
    return pg.types.getTypeParser(oid, format as 'text');
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/** Overrides for PGlite's parsers: it turns INT8 into a JS number by default, which could lose precision. */
export const pgliteParsers: Record<number, (value: string) => unknown> = {
  [OID.INT8]: identity,
};
