// Turns every failure into the JSON body of CONTRACT.md: {"error": ..., "details"?: ...}. Only OrchErrors show
// their message; anything else is logged with the request id and answered as a plain 500.
import type { FastifyError, FastifyInstance } from 'fastify';
import { errorBody, isOrchError } from '../../errors/catalog.ts';
import { DependencyUnavailable, isOutage, OUTAGE_RETRY_AFTER_SECONDS } from '../../errors/outage.ts';

/**
 * A route schema's failure whose message a seed fixes (request-schemas.ts `messages`): answered as it is, without
 * the `invalid request:` prefix. A plain Error, because fastify sets `code` and `validation` on it.
 */
export class ExactValidationMessage extends Error {}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | Error, request, reply) => {
    // A dependency outage (database or Redis down, however deep in the cause chain the driver's error sits, also
    // under a 500-class OrchError such as a stimulus' workflow_error): 503 with Retry-After, so that clients retry
    // the start instead of reporting a failure (issue 20). 4xx answers keep their code.
    if (err instanceof DependencyUnavailable || (isOutage(err) && (!isOrchError(err) || err.spec.http >= 500))) {
      request.log.warn({ err }, 'dependency unavailable; answering 503');
      return reply
        .status(503)
        .header('retry-after', String(OUTAGE_RETRY_AFTER_SECONDS))
        .send({ error: err instanceof DependencyUnavailable ? `${err.dependency} unavailable; retry later` : 'a dependency is unavailable; retry later' });
    }
    if (isOrchError(err)) {
      if (err.spec.http >= 500) request.log.error({ err }, 'request failed');
      const retryAfter = (err.details as { retry_after_seconds?: unknown } | undefined)?.retry_after_seconds;
      if (typeof retryAfter === 'number') reply.header('retry-after', String(retryAfter));
      if (err.spec.http === 503 && !reply.hasHeader('retry-after')) reply.header('retry-after', String(OUTAGE_RETRY_AFTER_SECONDS));
      return reply.status(err.spec.http).send(errorBody(err));
    }
    const fe = err as FastifyError;
    if (fe.validation) {
      return reply.status(400).send({ error: err instanceof ExactValidationMessage ? err.message : `invalid request: ${fe.message}` });
    }
    if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
      // Fastify's own client errors: bad JSON, unsupported media type, body too large.
      return reply.status(fe.statusCode).send({ error: fe.message });
    }
    request.log.error({ err }, 'unhandled error');
    return reply.status(500).send({ error: 'internal error', details: { request_id: request.id } });
  });

  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send({ error: `route not found: ${request.method} ${request.url.split('?')[0]}` });
  });
}
