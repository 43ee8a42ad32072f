// Stimuli over HTTP (seed 000, CONTRACT.md, docs/STIMULI.md): POST /v1/stimuli (bearer), GET /v1/stimuli and
// GET /v1/stimuli/{id} (bearer, tenant-scoped), and POST /v1/webhooks/{source} (HMAC, no bearer: auth-hook's
// OPEN_PREFIXES). All of it is StimulusService; this file translates, and — being the edge — reads the webhook
// secret from the environment at request time and hands it to the signature check.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SYSTEM_TENANT } from '../../auth/principal.ts';
import { SIGNATURE_HEADER, verifyWebhookSignature, webhookSecretVariable } from '../../stimuli/signature.ts';
import type { StimulusService } from '../../stimuli/service.ts';
import { principalOf } from './auth-hook.ts';
import { intParam } from './query-params.ts';
import { scanJson } from './input-guard.ts';
import type { RequestOf } from './request-schemas.ts';

/** The tenant webhooks are ingested in (the route carries no identity); docs/STIMULI.md. */
export const WEBHOOK_TENANT = SYSTEM_TENANT;

/** Headers never copied onto a stimulus row: credentials. */
const DROPPED_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);

function forwardedHeaders(request: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(request.headers)) {
    if (v === undefined || DROPPED_HEADERS.has(k)) continue;
    out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Stimulus content within the JSON body limits (input-guard.ts), whether or not it turns out to be JSON. */
function boundedContent(text: string): void {
  const scan = scanJson(text);
  if (scan.over) throw scan.over;
}

export interface StimulusRouteOptions {
  /** Where webhook secrets come from; default process.env (read per request, so a rotated secret applies at once). */
  env?: NodeJS.ProcessEnv;
}

export async function registerStimulusRoutes(app: FastifyInstance, stimuli: StimulusService, o: StimulusRouteOptions = {}): Promise<void> {
  app.post<RequestOf<'POST /v1/stimuli'>>('/v1/stimuli', async (request) => {
    const p = principalOf(request);
    const b = request.body;
    // The content is parsed as JSON later (the workflow's input): the same bounds as a JSON body apply to it.
    if (typeof b.content === 'string') boundedContent(b.content);
    return stimuli.ingest({
      tenant: p.tenantId,
      subject: p.subject,
      roles: p.roles,
      source: b.source,
      content: b.content,
      idempotencyKey: b.idempotency_key ?? header(request, 'x-idempotency-key'),
      headers: b.headers,
    });
  });

  app.get<RequestOf<'GET /v1/stimuli'>>('/v1/stimuli', async (request) => {
    const p = principalOf(request);
    const q = request.query;
    const items = await stimuli.list(p.tenantId, { source: q.source, status: q.status, limit: intParam(q.limit, 'limit', { min: 1, max: 200 }), offset: intParam(q.offset, 'offset') });
    return { stimuli: items, count: items.length };
  });

  app.get<RequestOf<'GET /v1/stimuli/:id'>>('/v1/stimuli/:id', async (request) => {
    const p = principalOf(request);
    return stimuli.get(p.tenantId, request.params.id);
  });

  await app.register(async (scope) => {
    // Encapsulated: only the webhook route sees raw bytes, whatever the content type (the HMAC is over them).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    scope.post<RequestOf<'POST /v1/webhooks/:source'>>('/v1/webhooks/:source', async (request) => {
      const source = request.params.source;
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const env = o.env ?? process.env;
      verifyWebhookSignature(header(request, SIGNATURE_HEADER), env[webhookSecretVariable(source)], raw);
      const content = raw.toString('utf8');
      boundedContent(content);
      return stimuli.ingest({
        tenant: WEBHOOK_TENANT,
        source,
        content,
        idempotencyKey: header(request, 'x-idempotency-key'),
        headers: forwardedHeaders(request),
      });
    });
  });
}
