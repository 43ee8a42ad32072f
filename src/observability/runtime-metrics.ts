// Node.js runtime metrics in the names prom-client made familiar (its defaults are what operators' dashboards
// expect), read at scrape time: event-loop delay (perf_hooks' histogram, reset per scrape so each scrape shows the
// interval since the last — one blocked request stalled a node for minutes, issue 19), heap and process memory, and
// GC pauses by kind (a PerformanceObserver). Installed once per process, on the metrics registry's creation.
import { constants, monitorEventLoopDelay, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import type { Meter } from '@opentelemetry/api';

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

const NS = 1e-9;

export function installRuntimeMetrics(meter: Meter): void {
  // 50 ms resolution: a delay worth alerting on is far longer, and every tick wakes an idle node's loop (issue 18).
  const loop = monitorEventLoopDelay({ resolution: 50 });
  loop.enable();
  const gauge = (name: string, description: string, unit?: string) => meter.createObservableGauge(name, { description, ...(unit ? { unit } : {}) });
  const delayP50 = gauge('nodejs_eventloop_delay_p50_seconds', 'Event-loop delay, 50th percentile since the last scrape', 's');
  const delayP99 = gauge('nodejs_eventloop_delay_p99_seconds', 'Event-loop delay, 99th percentile since the last scrape', 's');
  const delayMax = gauge('nodejs_eventloop_delay_max_seconds', 'Event-loop delay, maximum since the last scrape', 's');
  const heapUsed = gauge('nodejs_heap_size_used_bytes', 'V8 heap in use', 'By');
  const heapTotal = gauge('nodejs_heap_size_total_bytes', 'V8 heap allocated', 'By');
  const external = gauge('nodejs_external_memory_bytes', 'Memory of C++ objects bound to JavaScript objects', 'By');
  const rss = gauge('process_resident_memory_bytes', 'Resident set size', 'By');
  meter.addBatchObservableCallback(
    (result) => {
      // An empty histogram (no sample yet) reports min/max as sentinels: only report what was measured.
      if (loop.count > 0) {
        result.observe(delayP50, loop.percentile(50) * NS);
        result.observe(delayP99, loop.percentile(99) * NS);
        result.observe(delayMax, loop.max * NS);
      }
      loop.reset();
      const mem = process.memoryUsage();
      result.observe(heapUsed, mem.heapUsed);
      result.observe(heapTotal, mem.heapTotal);
      result.observe(external, mem.external);
      result.observe(rss, mem.rss);
    },
    [delayP50, delayP99, delayMax, heapUsed, heapTotal, external, rss],
  );
  const gc = meter.createHistogram('nodejs_gc_duration_seconds', {
    description: 'Garbage-collection pauses by kind',
    unit: 's',
    advice: { explicitBucketBoundaries: [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1] },
  });
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const detail = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail;
      const kind = GC_KINDS[detail?.kind ?? -1] ?? 'other';
      gc.record(entry.duration / 1000, { kind });
    }
  });
  observer.observe({ entryTypes: ['gc'] });
}
