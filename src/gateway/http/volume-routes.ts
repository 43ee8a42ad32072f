// Volumes over HTTP (docs/VOLUMES.md): volume CRUD, quota, and the files of a volume — list, stat, download (raw
// bytes), upload (raw body, streamed; any Content-Type), mkdir, move, delete. All of it is VolumeService, scoped to
// the caller's tenant; this file only translates. A write that does not fit is 507 `{"error": ..., "details":
// {"code": "ENOSPC", ...}}` with nothing written; a path that leaves the volume is 400.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { StorageClass, VolumeService } from '../../volumes/service.ts';
import { listStorageEvents, type FsalOperation } from '../../fsal/events.ts';
import type { Queryable } from '../../storage/db.ts';
import { principalOf } from './auth-hook.ts';
import { intParam } from './query-params.ts';
import { flag } from './deploy-input.ts';

type Params = { id: string };

/** A list's limit (docs/VOLUMES.md: 1–1000) or offset: strict digits within range (query-params.ts). */
function intQuery(v: string | undefined, name: 'limit' | 'offset'): number | undefined {
  return intParam(v, name, name === 'limit' ? { min: 1, max: 1000 } : {});
}

function objectBody(request: FastifyRequest): Record<string, unknown> {
  const b = request.body;
  if (typeof b !== 'object' || b === null || Array.isArray(b)) throw new OrchError(Errors.BAD_REQUEST, 'body must be a JSON object');
  return b as Record<string, unknown>;
}

function pathQuery(q: { path?: string }, required: boolean): string {
  if (q.path === undefined || q.path === '') {
    if (required) throw new OrchError(Errors.BAD_REQUEST, 'query parameter path is required');
    return '/';
  }
  return q.path;
}

function str(b: Record<string, unknown>, name: string): string {
  const v = b[name];
  if (typeof v !== 'string' || v === '') throw new OrchError(Errors.BAD_REQUEST, `${name} is required and must be a non-empty string`);
  return v;
}

/** Content-Disposition with a safe ASCII fallback and the UTF-8 name (RFC 6266). */
function disposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_') || 'download';
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

const OPERATIONS: readonly FsalOperation[] = ['lookup', 'getattr', 'readdir', 'read', 'write', 'create', 'remove', 'rename', 'mkdir', 'rmdir'];

/** `db` serves the volume's StorageEvents (GET /v1/volumes/{id}/events); without it that route is not registered. */
export async function registerVolumeRoutes(app: FastifyInstance, volumes: VolumeService, db?: Queryable): Promise<void> {
  await app.register(async (scope) => {
    if (db) {
      // The volume's StorageEvents, oldest first, paged (default 50, max 200 like the other logs routes).
      scope.get<{ Params: Params; Querystring: { limit?: string; offset?: string; execution_id?: string; operation?: string } }>(
        '/v1/volumes/:id/events',
        async (request) => {
          const p = principalOf(request);
          const q = request.query;
          const limit = intParam(q.limit, 'limit', { min: 1, max: 200 }) ?? 50;
          const offset = intQuery(q.offset, 'offset') ?? 0;
          if (q.operation !== undefined && !OPERATIONS.includes(q.operation as FsalOperation)) {
            throw new OrchError(Errors.BAD_REQUEST, `operation must be one of ${OPERATIONS.join(', ')}`);
          }
          if (q.execution_id !== undefined && !/^[0-9a-f-]{36}$/i.test(q.execution_id)) throw new OrchError(Errors.BAD_REQUEST, 'execution_id must be a UUID');
          const v = await volumes.get(p.tenantId, request.params.id); // 404 for a volume the tenant cannot see
          const page = await listStorageEvents(db, p.tenantId, {
            volume_id: v.id,
            limit,
            offset,
            ...(q.execution_id ? { execution_id: q.execution_id } : {}),
            ...(q.operation ? { operation: q.operation as FsalOperation } : {}),
          });
          return { volume_id: v.id, ...page };
        },
      );
    }
    scope.post('/v1/volumes', async (request, reply) => {
      const p = principalOf(request);
      const b = objectBody(request);
      if (b.size_limit_bytes === undefined) throw new OrchError(Errors.BAD_REQUEST, 'size_limit_bytes is required');
      if (b.storage_class !== undefined && typeof b.storage_class !== 'string') throw new OrchError(Errors.BAD_REQUEST, 'storage_class must be a string');
      if (b.ttl_hours !== undefined && typeof b.ttl_hours !== 'number') throw new OrchError(Errors.BAD_REQUEST, 'ttl_hours must be an integer');
      const v = await volumes.create({
        tenantId: p.tenantId,
        ownerSubject: p.subject,
        label: b.label as string,
        sizeLimitBytes: b.size_limit_bytes as number,
        ...(b.storage_class !== undefined ? { storageClass: b.storage_class as StorageClass } : {}),
        ...(b.ttl_hours !== undefined ? { ttlHours: b.ttl_hours as number } : {}),
      });
      return reply.status(201).send(v);
    });

    scope.get<{ Querystring: { limit?: string; offset?: string; owner_kind?: string; owner_ref?: string } }>('/v1/volumes', async (request) => {
      const q = request.query;
      const limit = intQuery(q.limit, 'limit');
      const offset = intQuery(q.offset, 'offset');
      const list = await volumes.list(principalOf(request).tenantId, {
        ...(limit !== undefined ? { limit } : {}),
        ...(offset !== undefined ? { offset } : {}),
        ...(q.owner_kind !== undefined ? { ownerKind: q.owner_kind } : {}),
        ...(q.owner_ref !== undefined ? { ownerRef: q.owner_ref } : {}),
      });
      return { volumes: list };
    });

    scope.get<{ Params: Params }>('/v1/volumes/:id', async (request) => volumes.get(principalOf(request).tenantId, request.params.id));

    scope.patch<{ Params: Params }>('/v1/volumes/:id', async (request) => {
      const b = objectBody(request);
      return volumes.rename(principalOf(request).tenantId, request.params.id, str(b, 'label'));
    });

    scope.delete<{ Params: Params }>('/v1/volumes/:id', async (request) => {
      await volumes.delete(principalOf(request).tenantId, request.params.id);
      return { deleted: true, id: request.params.id };
    });

    scope.get<{ Params: Params }>('/v1/volumes/:id/quota', async (request) => volumes.quota(principalOf(request).tenantId, request.params.id));

    scope.get<{ Params: Params; Querystring: { path?: string } }>('/v1/volumes/:id/files', async (request) => {
      const path = pathQuery(request.query, false);
      const entries = await volumes.listDir(principalOf(request).tenantId, request.params.id, path);
      return { path, entries };
    });

    scope.get<{ Params: Params; Querystring: { path?: string } }>('/v1/volumes/:id/files/stat', async (request) =>
      volumes.stat(principalOf(request).tenantId, request.params.id, pathQuery(request.query, true)),
    );

    scope.get<{ Params: Params; Querystring: { path?: string } }>('/v1/volumes/:id/files/content', async (request, reply) => {
      const { info, stream } = await volumes.openRead(principalOf(request).tenantId, request.params.id, pathQuery(request.query, true));
      return reply
        .header('content-type', 'application/octet-stream')
        .header('content-length', String(info.size))
        .header('content-disposition', disposition(info.name))
        .header('last-modified', new Date(info.mtime).toUTCString())
        .send(stream);
    });

    scope.post<{ Params: Params }>('/v1/volumes/:id/files/mkdir', async (request, reply) => {
      const b = objectBody(request);
      const info = await volumes.mkdir(principalOf(request).tenantId, request.params.id, str(b, 'path'), { parents: b.parents === undefined ? true : flag(b.parents, 'parents') });
      return reply.status(201).send(info);
    });

    scope.post<{ Params: Params }>('/v1/volumes/:id/files/move', async (request) => {
      const b = objectBody(request);
      return volumes.move(principalOf(request).tenantId, request.params.id, str(b, 'from'), str(b, 'to'), { overwrite: flag(b.overwrite, 'overwrite') });
    });

    scope.delete<{ Params: Params; Querystring: { path?: string; recursive?: string } }>('/v1/volumes/:id/files', async (request) =>
      volumes.remove(principalOf(request).tenantId, request.params.id, pathQuery(request.query, true), { recursive: flag(request.query.recursive, 'recursive') }),
    );

    // Uploads take the raw body of any type, streamed to the volume (bounded by its free space, not by the JSON
    // body limit); in a scope of their own so the JSON routes above keep their parser.
    await scope.register(async (raw) => {
      raw.removeAllContentTypeParsers();
      raw.addContentTypeParser('*', (_request, _payload, done) => done(null));
      raw.put<{ Params: Params; Querystring: { path?: string; exclusive?: string } }>('/v1/volumes/:id/files/content', async (request, reply) => {
        try {
          const result = await volumes.writeFile(principalOf(request).tenantId, request.params.id, pathQuery(request.query, true), request.raw, {
            exclusive: flag(request.query.exclusive, 'exclusive'),
          });
          return await reply.status(201).send(result);
        } catch (err) {
          // Refused before the body was read to its end (ENOSPC, a bad path): the rest of it is not read, so the
          // connection cannot carry another request; tell the client instead of letting it reuse it and reset.
          if (!request.raw.complete) reply.header('connection', 'close');
          throw err;
        }
      });
    });
  });
}
