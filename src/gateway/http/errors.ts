// Turns every failure into the JSON body of CONTRACT.md: {"error": ..., "details"?: ...}. Only OrchErrors show
// their message; anything else is logged with the request id and answered as a plain 500.
import type { FastifyError, FastifyInstance } from 'fastify';
import { errorBody, isOrchError } from '../../errors/catalog.ts';

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | Error, request, reply) => {
    if (isOrchError(err)) {
      if (err.spec.http >= 500) request.log.error({ err }, 'request failed');
      return reply.status(err.spec.http).send(errorBody(err));
    }
    const fe = err as FastifyError;
    if (fe.validation) {
      return reply.status(400).send({ error: `invalid request: ${fe.message}` });
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
