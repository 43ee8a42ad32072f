// HTTP server spans for the fastify app, made with hooks (no patching): one SERVER span per request, continuing a
// W3C `traceparent` the caller sent. The span is made active for the route handler (preHandler runs after the body
// is read, so the handler and everything it awaits are its children), named `<METHOD> <route pattern>` once the
// route is known, and ended when the response is sent or the request is aborted. The same hooks record
// orch_http_request_duration_seconds {method, route, status}: the route pattern (`/v1/executions/:id`, never the
// raw path, so ids do not explode the label set), `unmatched` for a 404 no route took.
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { orchMetrics } from './metrics.ts';
import { tracer } from './tracing.ts';

export function installHttpTracing(app: FastifyInstance): void {
  const spans = new WeakMap<FastifyRequest, Span>();
  const durations = orchMetrics().httpRequestDuration;
  const finish = (request: FastifyRequest, status?: number, elapsedMs?: number): void => {
    if (elapsedMs !== undefined) durations.record(elapsedMs / 1000, { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: status === undefined ? 'aborted' : String(status) });
    const span = spans.get(request);
    if (!span) return;
    spans.delete(request);
    const route = request.routeOptions.url;
    if (route) {
      span.updateName(`${request.method} ${route}`);
      span.setAttribute('http.route', route);
    }
    if (status !== undefined) {
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    } else {
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'request aborted' });
    }
    span.end();
  };
  app.addHook('onRequest', (request, _reply, done) => {
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    const span = tracer().startSpan(
      request.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': request.method,
          'url.path': request.url.split('?')[0] ?? '',
          'orch.request_id': request.id,
        },
      },
      parent,
    );
    spans.set(request, span);
    context.with(trace.setSpan(parent, span), done);
  });
  app.addHook('preHandler', (request, _reply, done) => {
    const span = spans.get(request);
    if (!span) {
      done();
      return;
    }
    context.with(trace.setSpan(context.active(), span), done);
  });
  // The callback form (nothing here waits): an async hook costs a promise and a microtask hop per request.
  app.addHook('onError', (request, _reply, error, done) => {
    spans.get(request)?.recordException(error);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    finish(request, reply.statusCode, reply.elapsedTime);
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    finish(request, undefined, undefined);
    done();
  });
}
