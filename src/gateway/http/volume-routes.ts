// Volumes over HTTP (docs/VOLUMES.md): volume CRUD, quota, and the files of a volume — list, stat, download (raw
// bytes), upload (raw body, streamed; any Content-Type), mkdir, move, delete. All of it is VolumeService, scoped to
// the caller's tenant; this file only translates. A write that does not fit is 507 `{"error": ..., "details":
// {"code": "ENOSPC", ...}}` with nothing written; a path that leaves the volume is 400.
import type { FastifyInstance } from 'fastify';
import type { StorageClass, VolumeService } from '../../volumes/service.ts';
import { listStorageEvents } from '../../fsal/events.ts';
import type { Queryable } from '../../storage/db.ts';
import { principalOf } from './auth-hook.ts';
import { intParam } from './query-params.ts';
import { flag } from './deploy-input.ts';
import type { RequestOf } from './request-schemas.ts';

/** A list's limit (docs/VOLUMES.md: 1–1000) or offset: strict digits within range (query-params.ts). */
function intQuery(v: string | undefined, name: 'limit' | 'offset'): number | undefined {
  return intParam(v, name, name === 'limit' ? { min: 1, max: 1000 } : {});
}


/** Content-Disposition with a safe ASCII fallback and the UTF-8 name (RFC 6266). */
function disposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_') || 'download';
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/** `db` serves the volume's StorageEvents (GET /v1/volumes/{id}/events); without it that route is not registered. */
export async function registerVolumeRoutes(app: FastifyInstance, volumes: VolumeService, db?: Queryable): Promise<void> {
  await app.register(async (scope) => {
    if (db) {
      // The volume's StorageEvents, oldest first, paged (default 50, max 200 like the other logs routes).
      scope.get<RequestOf<'GET /v1/volumes/:id/events'>>(
        '/v1/volumes/:id/events',
        async (request) => {
          const p = principalOf(request);
          const q = request.query;
          const limit = intParam(q.limit, 'limit', { min: 1, max: 200 }) ?? 50;
          const offset = intQuery(q.offset, 'offset') ?? 0;
          const v = await volumes.get(p.tenantId, request.params.id); // 404 for a volume the tenant cannot see
          const page = await listStorageEvents(db, p.tenantId, {
            volume_id: v.id,
            limit,
            offset,
            ...(q.execution_id ? { execution_id: q.execution_id } : {}),
            ...(q.operation ? { operation: q.operation } : {}),
          });
          return { volume_id: v.id, ...page };
        },
      );
    }
    scope.post<RequestOf<'POST /v1/volumes'>>('/v1/volumes', async (request, reply) => {
      const p = principalOf(request);
      const b = request.body;
      // storage_class names are checked by the service (its error lists them).
      const v = await volumes.create({
        tenantId: p.tenantId,
        ownerSubject: p.subject,
        label: b.label as string,
        sizeLimitBytes: b.size_limit_bytes,
        ...(b.storage_class !== undefined ? { storageClass: b.storage_class as StorageClass } : {}),
        ...(b.ttl_hours !== undefined ? { ttlHours: b.ttl_hours } : {}),
      });
      return reply.status(201).send(v);
    });

    scope.get<RequestOf<'GET /v1/volumes'>>('/v1/volumes', async (request) => {
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

    scope.get<RequestOf<'GET /v1/volumes/:id'>>('/v1/volumes/:id', async (request) => volumes.get(principalOf(request).tenantId, request.params.id));

    scope.patch<RequestOf<'PATCH /v1/volumes/:id'>>('/v1/volumes/:id', async (request) => {
      return volumes.rename(principalOf(request).tenantId, request.params.id, request.body.label);
    });

    scope.delete<RequestOf<'DELETE /v1/volumes/:id'>>('/v1/volumes/:id', async (request) => {
      await volumes.delete(principalOf(request).tenantId, request.params.id);
      return { deleted: true, id: request.params.id };
    });

    scope.get<RequestOf<'GET /v1/volumes/:id/quota'>>('/v1/volumes/:id/quota', async (request) => volumes.quota(principalOf(request).tenantId, request.params.id));

    scope.get<RequestOf<'GET /v1/volumes/:id/files'>>('/v1/volumes/:id/files', async (request) => {
      const path = request.query.path || '/';
      const entries = await volumes.listDir(principalOf(request).tenantId, request.params.id, path);
      return { path, entries };
    });

    scope.get<RequestOf<'GET /v1/volumes/:id/files/stat'>>('/v1/volumes/:id/files/stat', async (request) =>
      volumes.stat(principalOf(request).tenantId, request.params.id, request.query.path),
    );

    scope.get<RequestOf<'GET /v1/volumes/:id/files/content'>>('/v1/volumes/:id/files/content', async (request, reply) => {
      const { info, stream } = await volumes.openRead(principalOf(request).tenantId, request.params.id, request.query.path);
      return reply
        .header('content-type', 'application/octet-stream')
        .header('content-length', String(info.size))
        .header('content-disposition', disposition(info.name))
        .header('last-modified', new Date(info.mtime).toUTCString())
        .send(stream);
    });

    scope.post<RequestOf<'POST /v1/volumes/:id/files/mkdir'>>('/v1/volumes/:id/files/mkdir', async (request, reply) => {
      const b = request.body;
      const info = await volumes.mkdir(principalOf(request).tenantId, request.params.id, b.path, { parents: b.parents === undefined ? true : flag(b.parents, 'parents') });
      return reply.status(201).send(info);
    });

    scope.post<RequestOf<'POST /v1/volumes/:id/files/move'>>('/v1/volumes/:id/files/move', async (request) => {
      const b = request.body;
      return volumes.move(principalOf(request).tenantId, request.params.id, b.from, b.to, { overwrite: flag(b.overwrite, 'overwrite') });
    });

    scope.delete<RequestOf<'DELETE /v1/volumes/:id/files'>>('/v1/volumes/:id/files', async (request) =>
      volumes.remove(principalOf(request).tenantId, request.params.id, request.query.path, { recursive: flag(request.query.recursive, 'recursive') }),
    );

    // Uploads take the raw body of any type, streamed to the volume (bounded by its free space, not by the JSON
    // body limit); in a scope of their own so the JSON routes above keep their parser.
    await scope.register(async (raw) => {
      raw.removeAllContentTypeParsers();
      raw.addContentTypeParser('*', (_request, _payload, done) => done(null));
      raw.put<RequestOf<'PUT /v1/volumes/:id/files/content'>>('/v1/volumes/:id/files/content', async (request, reply) => {
        try {
          const result = await volumes.writeFile(principalOf(request).tenantId, request.params.id, request.query.path, request.raw, {
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
