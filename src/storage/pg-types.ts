// The per-pool type parsers of `pg` (PostgreSQL, CockroachDB): the JS values types.ts describes. Apart from
// types.ts, which every node loads, so that a node on PGlite does not load pg (issue 15 item 4: start-up).
import pg from 'pg';
import { identity, OID } from './types.ts';

// Taken once at load so that a global pg.types.setTypeParser elsewhere cannot change what this pool returns.
const parseTimestamptz = pg.types.getTypeParser(OID.TIMESTAMPTZ, 'text');

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
