// Executions over HTTP (seed 000 and CONTRACT.md): start, list, detail, cancel, remove, logs, and the live event
// stream as Server-Sent Events. All of it is ExecutionService; this file only translates.
import type { FastifyInstance } from 'fastify';
import { toJsonEvent } from '../../agents/execution/events.ts';
import { ExecutionService } from '../../agents/execution/service.ts';
import { principalOf } from './auth-hook.ts';
import { intParam } from './query-params.ts';
import { preferWaitSeconds } from './prefer.ts';
import type { RequestOf } from './request-schemas.ts';
import { resumeFrom, streamSse } from './sse.ts';

type StartBody = RequestOf<'POST /v1/executions'>['Body'];

/** The run's context as the service takes it: a JSON text (context_overrides is the seed's alias). */
function contextOf(body: Pick<StartBody, 'context_json' | 'context_overrides'>): string | undefined {
  const c = body.context_json ?? body.context_overrides;
  if (c === undefined || c === null) return undefined;
  return typeof c === 'string' ? c : JSON.stringify(c);
}

export function registerExecutionRoutes(app: FastifyInstance, executions: ExecutionService): void {
  app.post<RequestOf<'POST /v1/executions'>>('/v1/executions', async (request, reply) => {
    const p = principalOf(request);
    const b = request.body;
    const req = { tenant: p.tenantId, agentId: b.agent_id, input: b.input, contextJson: contextOf(b) };
    // Run-and-wait (issue 16): `Prefer: wait=N` answers the execution's view (status, final_output, reason) when it
    // ends within N seconds, else `{execution_id}` as without it. A malformed preference is ignored (RFC 7240).
    const wait = preferWaitSeconds(request.headers.prefer);
    if (wait === undefined) return executions.start(req);
    const gone = new AbortController();
    const onClose = (): void => gone.abort();
    reply.raw.once('close', onClose);
    try {
      const out = await executions.startAndWait(req, wait * 1000, gone.signal);
      reply.header('preference-applied', `wait=${wait}`);
      return out;
    } finally {
      reply.raw.off('close', onClose);
    }
  });

  app.post<RequestOf<'POST /v1/agents/:id/execute'>>('/v1/agents/:id/execute', async (request) => {
    const p = principalOf(request);
    return executions.start({ tenant: p.tenantId, agentId: request.params.id, input: request.body.input, contextJson: contextOf(request.body) });
  });

  app.get<RequestOf<'GET /v1/executions'>>('/v1/executions', async (request) => {
    const p = principalOf(request);
    const q = request.query;
    const limit = intParam(q.limit, 'limit');
    const offset = intParam(q.offset, 'offset');
    const list = await executions.list(p.tenantId, {
      ...(q.agent_id !== undefined ? { agentId: q.agent_id } : {}),
      ...(q.status !== undefined ? { status: q.status } : {}),
      ...(q.id_prefix !== undefined ? { idPrefix: q.id_prefix } : {}),
      ...(limit !== undefined ? { limit } : {}),
      ...(offset !== undefined ? { offset } : {}),
    });
    return { executions: list };
  });

  app.get<RequestOf<'GET /v1/executions/:id'>>('/v1/executions/:id', async (request) => executions.get(principalOf(request).tenantId, request.params.id));

  app.post<RequestOf<'POST /v1/executions/:id/cancel'>>('/v1/executions/:id/cancel', async (request) => executions.cancel(principalOf(request).tenantId, request.params.id));

  app.delete<RequestOf<'DELETE /v1/executions/:id'>>('/v1/executions/:id', async (request) => {
    await executions.remove(principalOf(request).tenantId, request.params.id);
    return { removed: true };
  });

  app.get<RequestOf<'GET /v1/executions/:id/logs'>>('/v1/executions/:id/logs', async (request) =>
    executions.logs(principalOf(request).tenantId, request.params.id, intParam(request.query.limit, 'limit') ?? 50, intParam(request.query.offset, 'offset') ?? 0),
  );

  app.get<RequestOf<'GET /v1/executions/:id/timeline'>>('/v1/executions/:id/timeline', async (request) => executions.timeline(principalOf(request).tenantId, request.params.id));

  app.get<RequestOf<'GET /v1/executions/:id/stream'>>('/v1/executions/:id/stream', async (request, reply) => {
    const tenant = principalOf(request).tenantId;
    const id = request.params.id;
    const from = resumeFrom(request.headers['last-event-id']);
    // 404/400 before the 200 goes out. Without follow: only the events recorded when the request came
    // (`orch execution logs` without --follow), then the stream ends.
    await executions.get(tenant, id);
    const until = request.query.follow === 'false' ? await executions.lastSeq(tenant, id) : Number.POSITIVE_INFINITY;
    await streamSse(reply, {
      what: 'execution events',
      follow: (seq, deliver) => executions.follow(tenant, id, deliver, seq),
      data: toJsonEvent,
      isLast: (e) => ExecutionService.isTerminalEvent(e) || e.seq >= until,
    }, from, until < from);
  });
}
