// Client spans of the PostgreSQL driver, made by hand in src/storage/pg.ts (instrumentation-pg patches `pg` only
// when registered before `pg` is first loaded, which static imports make fragile; docs/OBSERVABILITY.md). A query span is made
// only under an active span (like instrumentation-pg's requireParentSpan), so background polling does not start a
// trace of its own for every statement. The statement text is recorded; parameters never are.
import { context, SpanKind, trace, type Span } from '@opentelemetry/api';
import { failSpan, tracer } from './tracing.ts';

const MAX_STATEMENT = 2000;

/** The first word of a statement (SELECT, INSERT, WITH, BEGIN, ...), for the span name. */
function operationOf(sql: string): string {
  const m = /^\s*([A-Za-z]+)/.exec(sql);
  return m ? m[1]!.toUpperCase() : 'QUERY';
}

/**
 * Runs one driver call inside a `pg.<OPERATION>` client span when there is a recording parent span; else runs it
 * bare. A parent that is not recording (tracing off: AlwaysOffSampler; or a trace sampled out) would only get a
 * non-recording child, which costs a span object, attributes and a context switch per statement for nothing.
 */
export function inDbSpan<T>(sql: string, fn: () => Promise<T>, what?: string): Promise<T> {
  if (!trace.getActiveSpan()?.isRecording()) return fn();
  const op = what ?? operationOf(sql);
  // A query span is not made active (nothing runs under it, and skipping context.with keeps the hot path short); a
  // transaction span is, so the transaction's statements are its children.
  const span: Span = tracer().startSpan(`pg.${op}`, {
    kind: SpanKind.CLIENT,
    attributes: { 'db.system.name': 'postgresql', 'db.operation.name': op, ...(what ? {} : { 'db.query.text': sql.length > MAX_STATEMENT ? `${sql.slice(0, MAX_STATEMENT)}…` : sql }) },
  });
  const started = what ? context.with(trace.setSpan(context.active(), span), fn) : fn();
  return started.then(
    (result) => {
      span.end();
      return result;
    },
    (err: unknown) => {
      failSpan(span, err);
      span.end();
      throw err;
    },
  );
}
