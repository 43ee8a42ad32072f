// Session settings every pooled PostgreSQL connection gets before its first statement.
//
// plan_cache_mode = force_custom_plan: hot statements run as named prepared statements (parsed once per connection),
// and by default PostgreSQL switches such a statement to a generic plan after five runs and keeps that plan until
// something invalidates it (an ANALYZE of the table). A plan made in a node's first seconds, while the table holds a
// page or two, is a sequential scan; when autovacuum lags (a busy server), every later run reads the whole growing
// table — issue 23's soak fell from ~90 to ~18 runs/s that way. A custom plan is made for the parameters and the
// table's size at hand, each run, so a plan from a small table is never reused; planning costs far less than one
// scan of a large table. CockroachDB plans each statement anew by default (its plan_cache_mode defaults to
// force_custom_plan); an older CockroachDB without the setting refuses the SET, which is logged once and harmless.
import type pg from 'pg';
import type { Logger } from '../logging/logger.ts';

export const SESSION_SETTINGS = 'SET plan_cache_mode = force_custom_plan';

/** The pool's onConnect hook: runs before the new client serves anything. A refusal is logged once and the client
 * is used anyway (the settings tune plans; nothing depends on them for correctness). */
export function sessionSetup(logger: Logger | undefined): (client: pg.ClientBase) => Promise<void> {
  let warned = false;
  return async (client) => {
    try {
      await client.query(SESSION_SETTINGS);
    } catch (err) {
      if (warned) return;
      warned = true;
      logger?.warn({ err }, 'the database refused the session settings (plan_cache_mode); statements run with its default plans');
    }
  };
}
