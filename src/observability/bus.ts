// Event-bus lag: the time from an event being recorded (its `at`, written with the event row) to its live arrival
// at a subscriber, per stream kind (execution, workflow, nodes, ...). History read by a late subscriber is not lag
// and is not recorded.
import { orchMetrics } from './metrics.ts';

export function recordBusLag(event: { stream: string; at: string }): void {
  const at = Date.parse(event.at);
  if (Number.isNaN(at)) return;
  const colon = event.stream.indexOf(':');
  const kind = colon < 0 ? event.stream : event.stream.slice(0, colon);
  orchMetrics().busLag.record(Math.max(0, (Date.now() - at) / 1000), { stream_kind: kind });
}
