// Executions over HTTP (seed 000 and CONTRACT.md): start, list, detail, cancel, remove, logs, and the live event
// stream as Server-Sent Events. All of it is ExecutionService; this file only translates.
import type { FastifyInstance } from 'fastify';
import { Errors, OrchError } from '../../errors/catalog.ts';
import { toJsonEvent } from '../../agents/execution/events.ts';
import { ExecutionService } from '../../agents/execution/service.ts';
import { principalOf } from './auth-hook.ts';
import { intParam } from './query-params.ts';
import { preferWaitSeconds } from './prefer.ts';
import { ExecutionListQuery, IdParams, PageQuery } from './route-schemas.ts';
import { resumeFrom, streamSse } from './sse.ts';

interface StartBody {
  agent_id?: unknown;
  input?: unknown;
  context_json?: unknown;
  context_overrides?: unknown;
  intent?: unknown;
}

function inputOf(body: StartBody | undefined): string {
  if (body?.input === undefined) throw new OrchError(Errors.BAD_REQUEST, 'input is required');
  if (typeof body.input !== 'string') throw new OrchError(Errors.BAD_REQUEST, 'input must be a string');
  return body.input;
}

function contextOf(body: StartBody | undefined): string | undefined {
  const c = body?.context_json ?? body?.context_overrides;
  if (c === undefined || c === null) return undefined;
  return typeof c === 'string' ? c : JSON.stringify(c);
}

export function registerExecutionRoutes(app: FastifyInstance, executions: ExecutionService): void {
  app.post<{ Body: StartBody }>('/v1/executions', async (request, reply) => {
    const p = principalOf(request);
    const agentId = request.body?.agent_id;
    if (typeof agentId !== 'string') throw new OrchError(Errors.BAD_REQUEST, 'Invalid agent ID');
    const req = { tenant: p.tenantId, agentId, input: inputOf(request.body), contextJson: contextOf(request.body) };
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

  app.post<{ Params: { id: string }; Body: StartBody }>('/v1/agents/:id/execute', async (request) => {
    const p = principalOf(request);
    return executions.start({ tenant: p.tenantId, agentId: request.params.id, input: inputOf(request.body), contextJson: contextOf(request.body) });
  });

  app.get<{ Querystring: ExecutionListQuery }>('/v1/executions', { schema: { querystring: ExecutionListQuery } }, async (request) => {
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

  app.get<{ Params: IdParams }>('/v1/executions/:id', { schema: { params: IdParams } }, async (request) => executions.get(principalOf(request).tenantId, request.params.id));

  app.post<{ Params: { id: string } }>('/v1/executions/:id/cancel', async (request) => executions.cancel(principalOf(request).tenantId, request.params.id));

  app.delete<{ Params: { id: string } }>('/v1/executions/:id', async (request) => {
    await executions.remove(principalOf(request).tenantId, request.params.id);
    return { removed: true };
  });

  app.get<{ Params: IdParams; Querystring: PageQuery }>('/v1/executions/:id/logs', { schema: { params: IdParams, querystring: PageQuery } }, async (request) =>
    executions.logs(principalOf(request).tenantId, request.params.id, intParam(request.query.limit, 'limit') ?? 50, intParam(request.query.offset, 'offset') ?? 0),
  );

  app.get<{ Params: { id: string } }>('/v1/executions/:id/timeline', async (request) => executions.timeline(principalOf(request).tenantId, request.params.id));

  app.get<{ Params: { id: string }; Querystring: { follow?: string } }>('/v1/executions/:id/stream', async (request, reply) => {
    const follow = request.query.follow;
    if (follow !== undefined && follow !== 'true' && follow !== 'false') throw new OrchError(Errors.BAD_REQUEST, 'follow must be true or false');
    const tenant = principalOf(request).tenantId;
    const id = request.params.id;
    const from = resumeFrom(request.headers['last-event-id']);
    // 404/400 before the 200 goes out. Without follow: only the events recorded when the request came
    // (`orch execution logs` without --follow), then the stream ends.
    await executions.get(tenant, id);
    const until = follow === 'false' ? await executions.lastSeq(tenant, id) : Number.POSITIVE_INFINITY;
    await streamSse(reply, {
      what: 'execution events',
      follow: (seq, deliver) => executions.follow(tenant, id, deliver, seq),
      data: toJsonEvent,
      isLast: (e) => ExecutionService.isTerminalEvent(e) || e.seq >= until,
    }, from, until < from);
  });
}
