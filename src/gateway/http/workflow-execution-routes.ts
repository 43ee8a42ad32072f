// Workflow runs over HTTP (seed 000 and CONTRACT.md): run, list, detail, signal, cancel, remove, paged logs and the
// live event stream as Server-Sent Events. All of it is WorkflowExecutionService; this file only translates.
import type { FastifyInstance } from 'fastify';
import { Errors, OrchError } from '../../errors/catalog.ts';
import { WorkflowExecutionService } from '../../workflow/service.ts';
import { principalOf } from './auth-hook.ts';
import { preferWaitSeconds } from './prefer.ts';
import { intParam } from './query-params.ts';
import type { RequestOf } from './request-schemas.ts';
import { resumeFrom, streamSse } from './sse.ts';

export function registerWorkflowExecutionRoutes(app: FastifyInstance, runs: WorkflowExecutionService): void {
  app.post<RequestOf<'POST /v1/workflows/:name/run'>>('/v1/workflows/:name/run', async (request, reply) => {
    const p = principalOf(request);
    const b = request.body ?? {};
    const req = {
      tenant: p.tenantId,
      workflow: request.params.name,
      input: b.input,
      intent: b.intent,
      blackboard: b.blackboard,
      version: b.version,
      userId: p.subject,
    };
    // Run-and-wait (issue 16): `Prefer: wait=N` answers 200 with the run's end if it comes within N seconds, else
    // 201 with the run id as without it. A malformed preference is ignored (RFC 7240).
    const wait = preferWaitSeconds(request.headers.prefer);
    if (wait === undefined) return reply.status(201).send(await runs.run(req));
    const gone = new AbortController();
    const onClose = (): void => gone.abort();
    reply.raw.once('close', onClose);
    try {
      const out = await runs.runAndWait(req, wait * 1000, gone.signal);
      reply.header('preference-applied', `wait=${wait}`);
      return reply.status(out.status === 'started' ? 201 : 200).send(out);
    } finally {
      reply.raw.off('close', onClose);
    }
  });

  app.get<RequestOf<'GET /v1/workflows/executions'>>('/v1/workflows/executions', async (request) => {
    const q = request.query;
    const limit = intParam(q.limit, 'limit');
    const offset = intParam(q.offset, 'offset');
    const executions = await runs.list(principalOf(request).tenantId, {
      ...(q.workflow_id !== undefined ? { workflow: q.workflow_id } : {}),
      ...(q.status !== undefined ? { status: q.status } : {}),
      ...(q.id_prefix !== undefined ? { idPrefix: q.id_prefix } : {}),
      ...(limit !== undefined ? { limit } : {}),
      ...(offset !== undefined ? { offset } : {}),
    });
    return { executions, count: executions.length };
  });

  app.get<RequestOf<'GET /v1/workflows/executions/:id'>>('/v1/workflows/executions/:id', async (request) => runs.get(principalOf(request).tenantId, request.params.id));

  app.post<RequestOf<'POST /v1/workflows/executions/:id/signal'>>('/v1/workflows/executions/:id/signal', async (request) => {
    const p = principalOf(request);
    const out = await runs.signal(p.tenantId, request.params.id, request.body.response, p.subject);
    if (!out.signalled) throw new OrchError(Errors.CONFLICT, out.error ?? 'execution is not waiting for human input');
    return { signalled: true, execution_id: request.params.id };
  });

  app.post<RequestOf<'POST /v1/workflows/executions/:id/cancel'>>('/v1/workflows/executions/:id/cancel', async (request) => {
    const out = await runs.cancel(principalOf(request).tenantId, request.params.id);
    return { ...out, execution_id: request.params.id };
  });

  app.delete<RequestOf<'DELETE /v1/workflows/executions/:id'>>('/v1/workflows/executions/:id', async (request) => {
    await runs.remove(principalOf(request).tenantId, request.params.id);
    return { removed: true, execution_id: request.params.id };
  });

  app.get<RequestOf<'GET /v1/workflows/executions/:id/logs'>>('/v1/workflows/executions/:id/logs', async (request) => {
    const out = await runs.logs(
      principalOf(request).tenantId,
      request.params.id,
      intParam(request.query.limit, 'limit') ?? 50,
      intParam(request.query.offset, 'offset') ?? 0,
    );
    return { execution_id: out.execution_id, events: out.events, count: out.count, limit: out.limit, offset: out.offset, total: out.total };
  });

  app.get<RequestOf<'GET /v1/workflows/executions/:id/stream'>>('/v1/workflows/executions/:id/stream', async (request, reply) => {
    const tenant = principalOf(request).tenantId;
    const id = request.params.id;
    // follow() validates (400/404) before it delivers anything: one row read per stream, and for a run started
    // here no history query (recent-events.ts).
    await streamSse(reply, {
      what: 'workflow events',
      follow: (seq, deliver) => runs.follow(tenant, id, deliver, seq),
      data: (e) => ({ [e.type]: e.payload }),
      isLast: (e) => WorkflowExecutionService.isTerminalEvent(e),
    }, resumeFrom(request.headers['last-event-id']));
  });
}
