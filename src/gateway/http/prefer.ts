// The `Prefer: wait=<seconds>` request preference (RFC 7240 §4.3) for run-and-wait endpoints. Per the RFC a
// preference the server does not understand, or a malformed one, is ignored (no 400): the request is served as if
// it had not asked, and `Preference-Applied` is only sent for the wait actually honoured.

import { MAX_RUN_WAIT_SECONDS } from '../../workflow/await-end.ts';

/** The longest wait honoured; a larger ask is capped (and the cap is what Preference-Applied reports). */
export const MAX_PREFER_WAIT_SECONDS = MAX_RUN_WAIT_SECONDS;

/** Seconds to wait from the Prefer header(s), capped; undefined when absent, malformed or zero. */
export function preferWaitSeconds(header: string | string[] | undefined, max = MAX_PREFER_WAIT_SECONDS): number | undefined {
  if (header === undefined) return undefined;
  const values = Array.isArray(header) ? header : [header];
  for (const value of values) {
    for (const pref of value.split(',')) {
      // A preference is token [= value] followed by ;-parameters, which wait does not define (ignored).
      const [head = ''] = pref.split(';');
      const eq = head.indexOf('=');
      if (eq < 0) continue;
      if (head.slice(0, eq).trim().toLowerCase() !== 'wait') continue;
      const raw = head.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
      // delta-seconds (RFC 7234 §1.2.1): digits only; anything else is ignored, as is a later duplicate (RFC 7240 §2).
      if (!/^\d{1,10}$/.test(raw)) return undefined;
      const n = Number(raw);
      return n > 0 ? Math.min(n, max) : undefined;
    }
  }
  return undefined;
}
