// gRPC server spans, made in the guard every service handler goes through (src/gateway/grpc/guard.ts): one SERVER
// span per call, named by the full method path, continuing a `traceparent` sent in metadata, with the gRPC status
// code of the answer. The same start and end record orch_grpc_request_duration_seconds {method, status}.
import { status as GrpcStatus } from '@grpc/grpc-js';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { orchMetrics } from './metrics.ts';
import { tracer } from './tracing.ts';

const STATUS_NAMES = new Map<number, string>(Object.entries(GrpcStatus).filter(([, v]) => typeof v === 'number').map(([k, v]) => [v as number, k]));

interface MetadataLike {
  get(key: string): unknown[];
}

export interface GrpcServerSpan {
  /** Runs `fn` with the call's span active. */
  within<T>(fn: () => T): T;
  /** Ends the span (once) with the status code of the answer: 0 OK, or the error's `code`. */
  end(err?: unknown): void;
}

export function startGrpcServerSpan(path: string, metadata: MetadataLike): GrpcServerSpan {
  // Only the keys the propagator reads (traceparent, tracestate, baggage): copying all metadata would copy the
  // bearer token of every call.
  const carrier: Record<string, string> = {};
  for (const k of propagation.fields()) {
    const v = metadata.get(k)[0];
    if (typeof v === 'string') carrier[k] = v;
  }
  const parent = propagation.extract(ROOT_CONTEXT, carrier);
  const [, service = '', method = ''] = /^\/([^/]+)\/(.+)$/.exec(path) ?? [];
  const span: Span = tracer().startSpan(path.slice(1), { kind: SpanKind.SERVER, attributes: { 'rpc.system': 'grpc', 'rpc.service': service, 'rpc.method': method } }, parent);
  const ctx = trace.setSpan(parent, span);
  const t0 = performance.now();
  let ended = false;
  return {
    within: (fn) => context.with(ctx, fn),
    end: (err) => {
      if (ended) return;
      ended = true;
      const code = err === undefined || err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 2;
      span.setAttribute('rpc.grpc.status_code', code);
      orchMetrics().grpcRequestDuration.record((performance.now() - t0) / 1000, { method: path, status: STATUS_NAMES.get(code) ?? String(code) });
      if (code !== 0) span.setStatus({ code: SpanStatusCode.ERROR, ...(err instanceof Error || typeof (err as { details?: unknown })?.details === 'string' ? { message: String((err as { details?: string }).details ?? (err as Error).message) } : {}) });
      span.end();
    },
  };
}
