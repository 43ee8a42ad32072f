// Installs tracing for the process: a NodeTracerProvider with the AsyncLocalStorage context manager and the W3C
// trace-context propagator, and span processors: an OTLP exporter when an endpoint is given (http/protobuf, or gRPC
// when OTEL_EXPORTER_OTLP_PROTOCOL=grpc), plus any
// the caller adds (tests add an in-memory exporter). Called once, at the edge (the CLI reads the OTEL_* variables);
// library code only uses the API (tracing.ts) and never reads the environment.
// It is installed even with no exporter (issue 19): then nothing is sampled (AlwaysOffSampler: no span is recorded,
// which costs next to nothing) but every request still gets a valid trace and span id, so each log line of a request
// carries trace_id/span_id (src/logging/logger.ts) and a caller's `traceparent` is continued.
// The resource (service.name, service.instance.id, and OTEL_RESOURCE_ATTRIBUTES) is shared with the metrics
// (target_info in /metrics).
import { context, propagation, trace } from '@opentelemetry/api';
import { Metadata } from '@grpc/grpc-js';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { lazyRequire } from '../util/lazy-require.ts';
import { setMetricsResource } from './metrics.ts';

// The OTLP exporters (with their transformer, protobuf and exporter-base packages, ~40 modules, about 0.2 s of a quiet
// start) are required only when an endpoint is configured: most nodes and every test node export nothing (issue 15).
const otlpGrpc = lazyRequire<typeof import('@opentelemetry/exporter-trace-otlp-grpc')>('@opentelemetry/exporter-trace-otlp-grpc');
const otlpProto = lazyRequire<typeof import('@opentelemetry/exporter-trace-otlp-proto')>('@opentelemetry/exporter-trace-otlp-proto');

export interface TelemetryOptions {
  /** service.name of every span. Default "orch". */
  serviceName?: string;
  /** service.instance.id (the node id). */
  serviceInstanceId?: string;
  /** OTEL_RESOURCE_ATTRIBUTES, parsed; service.name and service.instance.id above win over the same keys here. */
  resourceAttributes?: Record<string, string>;
  /**
   * OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base URL; over http/protobuf spans go to `<endpoint>/v1/traces`,
   * over gRPC to the TraceService at the endpoint itself (`http://collector:4317`; https:// for TLS).
   */
  otlpEndpoint?: string;
  /** OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL: `http/protobuf` (default) or `grpc`. */
  otlpProtocol?: OtlpProtocol;
  /** OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the full traces URL, used as is (wins over otlpEndpoint). */
  otlpTracesUrl?: string;
  /** Headers sent with every export (OTEL_EXPORTER_OTLP_HEADERS, parsed by the edge). */
  otlpHeaders?: Record<string, string>;
  /** How often batched spans are exported. Default 2000 ms. */
  exportIntervalMs?: number;
  /** More processors (an in-memory exporter in tests). */
  spanProcessors?: SpanProcessor[];
}

export const OTLP_PROTOCOLS = ['http/protobuf', 'grpc'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

export interface Telemetry {
  readonly provider: NodeTracerProvider;
  /** Where spans are exported over OTLP; undefined when no endpoint was given. */
  readonly otlpUrl: string | undefined;
  /** How: http/protobuf or grpc. */
  readonly otlpProtocol: OtlpProtocol;
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

/** OTLP headers as gRPC metadata (keys lower-cased, as gRPC requires). */
function metadataOf(headers: Record<string, string>): Metadata {
  const m = new Metadata();
  for (const [k, v] of Object.entries(headers)) m.set(k.toLowerCase(), v);
  return m;
}

/**
 * OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL: `grpc` or `http/protobuf`. Anything else (the
 * specification's `http/json` included) is refused at start rather than silently sent another way.
 */
export function otlpProtocolOf(env: Record<string, string | undefined>): OtlpProtocol | undefined {
  const name = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const v = env[name]?.trim();
  if (!v) return undefined;
  if ((OTLP_PROTOCOLS as readonly string[]).includes(v)) return v as OtlpProtocol;
  throw new Error(`${name}: must be one of ${OTLP_PROTOCOLS.join(', ')} (got "${v}")`);
}

let installed: Telemetry | undefined;

/** Registers the process's tracer provider. A second call while one is installed is refused. */
export function startTelemetry(options: TelemetryOptions = {}): Telemetry {
  if (installed) throw new Error('telemetry is already started in this process');
  const protocol = options.otlpProtocol ?? 'http/protobuf';
  // gRPC has no per-signal path: the endpoint names the server, the method is TraceService/Export.
  const url = options.otlpTracesUrl ?? (options.otlpEndpoint ? (protocol === 'grpc' ? options.otlpEndpoint : otlpTracesUrlOf(options.otlpEndpoint)) : undefined);
  const processors: SpanProcessor[] = [...(options.spanProcessors ?? [])];
  if (url) {
    const exporter = protocol === 'grpc' ? new (otlpGrpc().OTLPTraceExporter)({ url, metadata: metadataOf(options.otlpHeaders ?? {}) }) : new (otlpProto().OTLPTraceExporter)({ url, headers: options.otlpHeaders ?? {} });
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
    otlpProtocol: protocol,
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
 * OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL and
 * OTEL_BSP_SCHEDULE_DELAY are honoured.
 */
export function telemetryOptionsFromEnv(env: Record<string, string | undefined>, nodeId?: string): TelemetryOptions {
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const tracesUrl = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY);
  const resourceAttributes = parseOtlpHeaders(env.OTEL_RESOURCE_ATTRIBUTES);
  const protocol = otlpProtocolOf(env);
  return {
    serviceName: env.OTEL_SERVICE_NAME?.trim() || resourceAttributes['service.name'] || 'orch',
    ...(nodeId ? { serviceInstanceId: nodeId } : {}),
    ...(Object.keys(resourceAttributes).length > 0 ? { resourceAttributes } : {}),
    ...(endpoint ? { otlpEndpoint: endpoint } : {}),
    ...(tracesUrl ? { otlpTracesUrl: tracesUrl } : {}),
    ...(protocol ? { otlpProtocol: protocol } : {}),
    otlpHeaders: parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS),
    ...(Number.isFinite(delay) && delay > 0 ? { exportIntervalMs: delay } : {}),
  };
}
