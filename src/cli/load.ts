// The LOAD column of `orch node ls`: a node's last heartbeat load as people read it, `cpu 12% mem 34% execs 3`
// (src/cluster/node-load.ts: a worker's heartbeat and a controller's or hybrid's own row), instead of its JSON.
// `load 0.52 mem 34%` is the node-peer actor's default (the 1-minute load average), for a row written without a
// sampler. Keys it does not know are shown as `key value`.

const KNOWN: Record<string, (v: number) => string> = {
  cpu_utilization_percent: (v) => `cpu ${Math.round(v)}%`,
  cpu_load_1m: (v) => `load ${v.toFixed(2)}`,
  memory_utilization_percent: (v) => `mem ${Math.round(v)}%`,
  active_execution_count: (v) => `execs ${v}`,
  // The heartbeat's event-loop delay (p99 over its interval): `loop 12 ms`, `loop 4.8 s`.
  event_loop_delay_ms: (v) => `loop ${v < 1000 ? `${Math.round(v)} ms` : `${(v / 1000).toFixed(1)} s`}`,
};

export function formatLoad(load: unknown): string {
  if (typeof load !== 'object' || load === null || Array.isArray(load)) return '-';
  const l = load as Record<string, unknown>;
  const parts: string[] = [];
  for (const [key, show] of Object.entries(KNOWN)) {
    const v = l[key];
    if (typeof v === 'number' && Number.isFinite(v)) parts.push(show(v));
  }
  for (const [key, v] of Object.entries(l)) {
    if (key in KNOWN || v === null || v === undefined) continue;
    parts.push(`${key} ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`);
  }
  return parts.length > 0 ? parts.join(' ') : '-';
}
