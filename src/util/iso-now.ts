// The current time as an ISO 8601 string, made once per millisecond. A busy node stamps every workflow step's events
// with it (several steps per millisecond at c = 64), and Date.prototype.toISOString was ~0.7 % of the node's busy
// time there (issue 16).
let lastMs = Number.NaN;
let lastIso = '';

/** `new Date().toISOString()`, the same string for calls within one millisecond. */
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}
