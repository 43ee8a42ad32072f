// SEAL over HTTP (seed 000 "SEAL"): POST /v1/seal/attest, POST /v1/seal/invoke and its alias POST /v1/invoke.
// These routes authenticate by the SEAL token and signature, not the bearer (auth-hook OPEN_PREFIXES). The invoke
// routes take the raw body whatever its content type and parse it here, so a malformed body is a JSON-RPC 400
// (-32600) like any other malformed envelope; the answer is always the JSON-RPC body with its mapped status.
import type { FastifyInstance } from 'fastify';
import { Errors, OrchError } from '../../errors/catalog.ts';
import { envelopeFromHttp, EnvelopeError, type SealEnvelope } from '../../seal/envelope.ts';
import type { SealService } from '../../seal/service.ts';

export const SEAL_HTTP_PATHS = ['/v1/seal/', '/v1/invoke'] as const;

function parseBody(raw: unknown): SealEnvelope | EnvelopeError {
  try {
    const text = Buffer.isBuffer(raw) ? raw.toString('utf8') : typeof raw === 'string' ? raw : undefined;
    if (text === undefined || text.length === 0) return new EnvelopeError('envelope must be a JSON object');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return new EnvelopeError('envelope is not valid JSON');
    }
    return envelopeFromHttp(body);
  } catch (err) {
    return err instanceof EnvelopeError ? err : new EnvelopeError('malformed envelope');
  }
}

export async function registerSealRoutes(app: FastifyInstance, seal: SealService): Promise<void> {
  await app.register(async (scope) => {
    // Encapsulated: only these routes see raw bodies.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    scope.post('/v1/seal/attest', async (request) => {
      let body: Record<string, unknown>;
      try {
        const raw = request.body;
        body = JSON.parse(Buffer.isBuffer(raw) ? raw.toString('utf8') : '') as Record<string, unknown>;
      } catch {
        throw new OrchError(Errors.BAD_REQUEST, 'body must be a JSON object');
      }
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new OrchError(Errors.BAD_REQUEST, 'body must be a JSON object');
      const key = body.agent_public_key ?? body.public_key_pem ?? body.public_key;
      return seal.attest({
        agent_id: body.agent_id as string,
        execution_id: body.execution_id as string,
        container_id: body.container_id as string,
        public_key: key as string,
      });
    });

    const invoke = async (request: { body: unknown }, reply: { status(n: number): { send(b: unknown): unknown } }) => {
      const res = await seal.invoke(parseBody(request.body));
      return reply.status(res.httpStatus).send(res.body);
    };
    scope.post('/v1/seal/invoke', invoke);
    scope.post('/v1/invoke', invoke);
  });
}
