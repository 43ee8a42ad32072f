// Installs tracing for the process: a NodeTracerProvider with the AsyncLocalStorage context manager and the W3C
// trace-context propagator, and span processors: an OTLP http/protobuf exporter when an endpoint is given, plus any
// the caller adds (tests add an in-memory exporter). Called once, at the edge (the CLI reads the OTEL_* variables);
// library code only uses the API (tracing.ts) and never reads the environment.
// It is installed even with no exporter (issue 19): then nothing is sampled (AlwaysOffSampler: no span is recorded,
// which costs next to nothing) but every request still gets a valid trace and span id, so each log line of a request
// carries trace_id/span_id (src/logging/logger.ts) and a caller's `traceparent` is continued.
// The resource (service.name, service.instance.id, and OTEL_RESOURCE_ATTRIBUTES) is shared with the metrics
// (target_info in /metrics).
import { context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { setMetricsResource } from './metrics.ts';

export interface TelemetryOptions {
  /** service.name of every span. Default "orch". */
  serviceName?: string;
  /** service.instance.id (the node id). */
  serviceInstanceId?: string;
  /** OTEL_RESOURCE_ATTRIBUTES, parsed; service.name and service.instance.id above win over the same keys here. */
  resourceAttributes?: Record<string, string>;
  /** OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base URL; spans go to `<endpoint>/v1/traces`. */
  otlpEndpoint?: string;
  /** OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the full traces URL, used as is (wins over otlpEndpoint). */
  otlpTracesUrl?: string;
  /** Headers sent with every export (OTEL_EXPORTER_OTLP_HEADERS, parsed by the edge). */
  otlpHeaders?: Record<string, string>;
  /** How often batched spans are exported. Default 2000 ms. */
  exportIntervalMs?: number;
  /** More processors (an in-memory exporter in tests). */
  spanProcessors?: SpanProcessor[];
}

export interface Telemetry {
  readonly provider: NodeTracerProvider;
  /** Where spans are exported over OTLP; undefined when no endpoint was given. */
  readonly otlpUrl: string | undefined;
  /** Exports what is buffered. */
  flush(): Promise<void>;
  /** Flushes, shuts the provider down and unregisters it (the API falls back to no-op spans). Idempotent. */
  shutdown(): Promise<void>;
}

/** `<endpoint>/v1/traces`, as the OTLP/HTTP specification derives a signal URL from the base endpoint. */
export function otlpTracesUrlOf(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}

/** OTEL_EXPORTER_OTLP_HEADERS or OTEL_RESOURCE_ATTRIBUTES (`k1=v1,k2=v2`, values URL-encoded) as a record. */
export function parseOtlpHeaders(value: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (value ?? '').split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    out[decodeURIComponent(part.slice(0, eq).trim())] = decodeURIComponent(part.slice(eq + 1).trim());
  }
  return out;
}

let installed: Telemetry | undefined;

/** Registers the process's tracer provider. A second call while one is installed is refused. */
export function startTelemetry(options: TelemetryOptions = {}): Telemetry {
  if (installed) throw new Error('telemetry is already started in this process');
  const url = options.otlpTracesUrl ?? (options.otlpEndpoint ? otlpTracesUrlOf(options.otlpEndpoint) : undefined);
  const processors: SpanProcessor[] = [...(options.spanProcessors ?? [])];
  if (url) {
    const exporter = new OTLPTraceExporter({ url, headers: options.otlpHeaders ?? {} });
    processors.push(new BatchSpanProcessor(exporter, { scheduledDelayMillis: options.exportIntervalMs ?? 2000 }));
  }
  const attributes: Record<string, string> = {
    ...(options.resourceAttributes ?? {}),
    'service.name': options.serviceName ?? options.resourceAttributes?.['service.name'] ?? 'orch',
    ...(options.serviceInstanceId ? { 'service.instance.id': options.serviceInstanceId } : {}),
  };
  setMetricsResource(attributes);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes(attributes),
    spanProcessors: processors,
    // Nobody to hand a span to: ids only (see the top of the file).
    ...(processors.length === 0 ? { sampler: new AlwaysOffSampler() } : {}),
  });
  provider.register();
  let stopping: Promise<void> | undefined;
  const telemetry: Telemetry = {
    provider,
    otlpUrl: url,
    flush: () => provider.forceFlush(),
    shutdown: () => {
      stopping ??= (async () => {
        try {
          await provider.forceFlush();
          await provider.shutdown();
        } finally {
          trace.disable();
          context.disable();
          propagation.disable();
          installed = undefined;
        }
      })();
      return stopping;
    },
  };
  installed = telemetry;
  return telemetry;
}

/**
 * The tracing options the standard OpenTelemetry variables ask for. Spans are exported only when
 * OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. The edge passes process.env;
 * OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS and OTEL_BSP_SCHEDULE_DELAY are honoured.
 */
export function telemetryOptionsFromEnv(env: Record<string, string | undefined>, nodeId?: string): TelemetryOptions {
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const tracesUrl = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY);
  const resourceAttributes = parseOtlpHeaders(env.OTEL_RESOURCE_ATTRIBUTES);
  return {
    serviceName: env.OTEL_SERVICE_NAME?.trim() || resourceAttributes['service.name'] || 'orch',
    ...(nodeId ? { serviceInstanceId: nodeId } : {}),
    ...(Object.keys(resourceAttributes).length > 0 ? { resourceAttributes } : {}),
    ...(endpoint ? { otlpEndpoint: endpoint } : {}),
    ...(tracesUrl ? { otlpTracesUrl: tracesUrl } : {}),
    otlpHeaders: parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS),
    ...(Number.isFinite(delay) && delay > 0 ? { exportIntervalMs: delay } : {}),
  };
}
