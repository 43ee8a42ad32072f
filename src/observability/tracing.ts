// Spans through the OpenTelemetry API. Library code only ever calls these helpers: with no tracer provider
// registered (no OTEL_EXPORTER_OTLP_ENDPOINT, or a test that installs none) every span is a non-recording no-op.
// The provider, its exporter and the context manager are installed at the edge (setup.ts, called by the CLI).
import { context, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';

export { SpanKind };
export type { Span, Context, Attributes };

/** The instrumentation scope of every orch span. */
export const TRACER_NAME = 'orch';

/** The tracer; a proxy, so one taken before the provider is registered still records once it is. */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/** Marks a span failed with the error (or message) and records it as an exception event. */
export function failSpan(span: Span, err: unknown): void {
  if (err instanceof Error) {
    span.recordException(err);
    span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
  } else {
    span.setStatus({ code: SpanStatusCode.ERROR, message: String(err) });
  }
}

/**
 * The active span when it is one whose children are never recorded: not recording and not sampled (tracing off:
 * every span of the AlwaysOffSampler; or a trace the ParentBased sampler left out, whose children it leaves out too).
 * Undefined when there is no active span (a root span may be sampled) or it records.
 */
export function unrecordedParent(): Span | undefined {
  const parent = trace.getActiveSpan();
  if (!parent || parent.isRecording() || (parent.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0) return undefined;
  return parent;
}

/**
 * Runs `fn` inside a new active span (a child of the active one), ends it when `fn` settles and marks it failed
 * when `fn` throws. Under a parent whose children are never recorded (unrecordedParent), `fn` runs bare with that
 * parent as its span: a non-recording child would cost its ids, its attributes and a context switch for nothing
 * (issue 16: a workflow run's span and its state spans were ~5 % of the node's busy time at c = 64 with tracing
 * off); log lines inside then carry the parent's span_id, which is the trace's last real span anyway.
 */
export function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  const parent = unrecordedParent();
  if (parent) {
    try {
      return fn(parent);
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }
  return tracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Runs `fn` with `span` as the active span (its children are made under it); the caller ends the span. */
export function withSpan<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** A span started under the active one and not made active; the caller ends it. */
export function startSpan(name: string, attributes: Attributes = {}, kind: SpanKind = SpanKind.INTERNAL, parent?: Context): Span {
  return tracer().startSpan(name, { kind, attributes }, parent ?? context.active());
}

/** trace_id and span_id of the active span, for log lines; empty when there is none (or it is not sampled in). */
export function activeTraceIds(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const c = span.spanContext();
  if (!trace.isSpanContextValid(c)) return {};
  return { trace_id: c.traceId, span_id: c.spanId };
}
