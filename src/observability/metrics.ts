// orch's metrics, recorded through the OpenTelemetry metrics API and read out in Prometheus text format at
// GET /metrics (src/gateway/http/metrics-route.ts). One MeterProvider per process, made on first use, with a
// Prometheus exporter as its reader (pull only: the exporter's own HTTP server is never started; our fastify app
// serves the text). Instruments are made once; recording with no scrape ever happening costs a map update.
//
// Names (the exporter adds `_total` to counters; the `_seconds` unit suffix is part of the instrument name):
//   orch_executions_started_total                              {agent, tenant}
//   orch_executions_finished_total                             {agent, tenant, status}        status: completed|failed|cancelled
//   orch_execution_duration_seconds                            {agent, tenant, status}        histogram
//   orch_workflows_started_total                               {workflow, tenant}
//   orch_workflows_finished_total                              {workflow, tenant, status}
//   orch_workflow_duration_seconds                             {workflow, tenant, status}     histogram
//   orch_tool_call_duration_seconds                            {tool, origin, outcome}        histogram
//   orch_llm_tokens_total                                      {model, agent, tenant, type}   type: prompt|completion
//   orch_llm_call_duration_seconds                             {model, outcome}               histogram
//   orch_node_heartbeats_total                                 {node}                          cluster_nodes.heartbeat_count
//   orch_node_heartbeat_age_seconds                            {node}                          gauge, now − last heartbeat
//   orch_cluster_nodes                                         {status}                        gauge, from cluster_nodes
//   orch_cluster_node_up                                       {node, role, status}            gauge, 1 per listed node
// (the four cluster instruments are read from cluster_nodes at scrape time: node-metrics.ts)
//   orch_ws_subscribers                                                                        gauge, live-feed subscriptions
//   orch_event_bus_lag_seconds                                 {bus}                           histogram, record → delivery
//   orch_unhandled_errors_total                                {kind, outage}                 process guard (src/node/process-guard.ts)
//   orch_http_request_duration_seconds                         {method, route, status}        histogram (observability/http.ts)
//   orch_grpc_request_duration_seconds                         {method, status}               histogram (observability/grpc.ts)
//   nodejs_* and process_*: event-loop delay, heap, GC, memory (runtime-metrics.ts)
//   orch_db_pool_connections {database, pool, state}, orch_redis_* {client}: clients.ts
// (One finished counter with a `status` label replaced orch_executions_{completed,failed,cancelled}_total and the
// workflow triplet in issue 19: sum(rate(...)) by (status) is the usual query, and the old names are gone.)
import { metrics, type BatchObservableCallback, type Counter, type ObservableCounter, type Histogram, type Meter, type ObservableGauge, type ObservableResult } from '@opentelemetry/api';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { installRuntimeMetrics } from './runtime-metrics.ts';

export const METER_NAME = 'orch';

/** Bucket bounds in seconds: 5 ms … 1 h, for calls (tools, LLM) and whole runs alike. */
const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
/** Requests: 1 ms … 60 s (a streaming call lasts as long as its stream). */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Event-bus lag: 0.5 ms … 10 s. */
const LAG_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export type RunStatus = 'completed' | 'failed' | 'cancelled';

export class OrchMetrics {
  readonly executionsStarted: Counter;
  readonly executionsFinished: Counter;
  readonly executionDuration: Histogram;
  readonly workflowsStarted: Counter;
  readonly workflowsFinished: Counter;
  readonly workflowDuration: Histogram;
  readonly toolCallDuration: Histogram;
  readonly llmTokens: Counter;
  readonly llmCallDuration: Histogram;
  readonly heartbeats: ObservableCounter;
  readonly heartbeatAge: ObservableGauge;
  readonly wsSubscribers: ObservableGauge;
  readonly busLag: Histogram;
  /** Unhandled rejections and uncaught exceptions the process guard caught; kind: rejection|exception. */
  readonly unhandledErrors: Counter;
  readonly clusterNodes: ObservableGauge;
  readonly clusterNodeUp: ObservableGauge;
  readonly httpRequestDuration: Histogram;
  readonly grpcRequestDuration: Histogram;
  /** Requests answered 429 by a rate limit; scope: ip|tenant|webhook (src/gateway/http/rate-limit.ts). */
  readonly rateLimited: Counter;

  constructor(private readonly meter: Meter) {
    const counter = (name: string, description: string): Counter => meter.createCounter(name, { description });
    const seconds = (name: string, description: string, boundaries = SECONDS_BUCKETS): Histogram =>
      meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: boundaries } });
    this.executionsStarted = counter('orch_executions_started', 'Agent executions started (first transition to running)');
    this.executionsFinished = counter('orch_executions_finished', 'Agent executions that reached a terminal status, by status');
    this.executionDuration = seconds('orch_execution_duration_seconds', 'Agent execution duration from start to its terminal status');
    this.workflowsStarted = counter('orch_workflows_started', 'Workflow runs started');
    this.workflowsFinished = counter('orch_workflows_finished', 'Workflow runs that reached a terminal status, by status');
    this.workflowDuration = seconds('orch_workflow_duration_seconds', 'Workflow run duration from start to its terminal status');
    this.toolCallDuration = seconds('orch_tool_call_duration_seconds', 'Tool call latency through the tool catalog');
    this.llmTokens = counter('orch_llm_tokens', 'LLM tokens used, by type (prompt or completion)');
    this.llmCallDuration = seconds('orch_llm_call_duration_seconds', 'LLM call latency');
    this.heartbeats = meter.createObservableCounter('orch_node_heartbeats', { description: 'Heartbeats recorded for each cluster node' });
    this.heartbeatAge = meter.createObservableGauge('orch_node_heartbeat_age_seconds', { description: 'Time since the last heartbeat of each cluster node', unit: 's' });
    this.wsSubscribers = meter.createObservableGauge('orch_ws_subscribers', { description: 'Live WebSocket feed subscriptions on this process' });
    this.wsSubscribers.addCallback((result) => {
      let n = 0;
      for (const count of this.wsSources) n += count();
      result.observe(n);
    });
    this.unhandledErrors = counter('orch_unhandled_errors', 'Unhandled promise rejections and uncaught exceptions caught by the process guard');
    this.busLag = seconds('orch_event_bus_lag_seconds', 'Time from an event being recorded to its live delivery to a subscriber', LAG_BUCKETS);
    this.clusterNodes = meter.createObservableGauge('orch_cluster_nodes', { description: 'Cluster nodes by status' });
    this.clusterNodeUp = meter.createObservableGauge('orch_cluster_node_up', { description: '1 for each cluster node, labelled with its role and status' });
    this.httpRequestDuration = seconds('orch_http_request_duration_seconds', 'HTTP request duration by method, route pattern and status code', REQUEST_BUCKETS);
    this.rateLimited = counter('orch_http_rate_limited', 'Requests refused with 429 by a rate limit, by scope (ip, tenant, webhook)');
    this.grpcRequestDuration = seconds('orch_grpc_request_duration_seconds', 'gRPC call duration by full method and status code name', REQUEST_BUCKETS);
  }

  private readonly wsSources = new Set<() => number>();

  /** A live feed (its subscriber count) is counted in orch_ws_subscribers until the returned function is called. */
  countWsSubscribers(count: () => number): () => void {
    this.wsSources.add(count);
    return () => {
      this.wsSources.delete(count);
    };
  }

  /** Adds a callback that observes several observable instruments at once; the returned function removes it. */
  observeBatch(callback: BatchObservableCallback, instruments: Parameters<Meter['addBatchObservableCallback']>[1]): () => void {
    this.meter.addBatchObservableCallback(callback, instruments);
    return () => this.meter.removeBatchObservableCallback(callback, instruments);
  }
}

interface Registry {
  provider: MeterProvider;
  exporter: PrometheusExporter;
  metrics: OrchMetrics;
}

let registry: Registry | undefined;
const serializer = new PrometheusSerializer();
let resourceAttributes: Record<string, string> = { 'service.name': 'orch' };

/**
 * The resource of the process's metrics (target_info in /metrics): OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME and
 * the node id, as the edge read them (setup.ts). Takes effect only before the first instrument is used, which the
 * CLI guarantees by calling it first; answers false when it came too late.
 */
export function setMetricsResource(attributes: Record<string, string>): boolean {
  if (registry) return false;
  resourceAttributes = { 'service.name': 'orch', ...attributes };
  return true;
}

function ensureRegistry(): Registry {
  if (registry) return registry;
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = new MeterProvider({ resource: resourceFromAttributes(resourceAttributes), readers: [exporter] });
  // The global provider, so that anything using the metrics API in this process lands in the same registry.
  // If someone registered another one first, ours still serves /metrics with orch's instruments.
  metrics.setGlobalMeterProvider(provider);
  const meter = provider.getMeter(METER_NAME);
  registry = { provider, exporter, metrics: new OrchMetrics(meter) };
  installRuntimeMetrics(meter);
  return registry;
}

/** The meter of the process's registry (clients.ts makes its instruments on it). */
export function orchMeter(): Meter {
  return ensureRegistry().provider.getMeter(METER_NAME);
}

/** The process's instruments. */
export function orchMetrics(): OrchMetrics {
  return ensureRegistry().metrics;
}

/** Everything recorded so far, in Prometheus text exposition format 0.0.4. */
export async function prometheusText(): Promise<string> {
  const { exporter } = ensureRegistry();
  const { resourceMetrics, errors } = await exporter.collect();
  if (errors.length > 0) throw new AggregateError(errors, 'collecting metrics failed');
  return serializer.serialize(resourceMetrics);
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Seconds between two instants (Date or ms), never negative. */
export function secondsBetween(from: Date | number, to: Date | number = Date.now()): number {
  const a = typeof from === 'number' ? from : from.getTime();
  const b = typeof to === 'number' ? to : to.getTime();
  return Math.max(0, (b - a) / 1000);
}

/**
 * Adds a callback to an observable gauge for as long as the returned function is not called (a node registers
 * its cluster view at start and removes it at stop).
 */
export function observe(gauge: ObservableGauge, callback: (result: ObservableResult) => Promise<void> | void): () => void {
  gauge.addCallback(callback);
  return () => gauge.removeCallback(callback);
}
