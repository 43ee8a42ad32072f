// Volume and file tools (seed 001 "Volume, file, git and script tools"), over the VolumeService the HTTP routes use:
//   orch.volume.create  label, size_limit_bytes (+ storage_class, ttl_hours)   → the volume           skip_judge false
//   orch.volume.list    none                                                   → {volumes}            skip_judge true
//   orch.volume.delete  volume_id → removes the volume and all its contents                        skip_judge false
//   orch.volume.quota   none (optional volume_id)                              → one quota or all     skip_judge true
//   orch.file.list      volume_id, path                                        → {path, entries}      skip_judge true
//   orch.file.read      volume_id, path (+ offset, length, encoding)           → {content, …}         skip_judge true
//   orch.file.write     volume_id, path, content (+ encoding utf8|base64)      → {bytes_written, …}   skip_judge false
//   orch.file.delete    volume_id, path (+ recursive)                          → {freed_bytes}        skip_judge false
//   orch.file.mkdir     volume_id, path (parents are made)                     → the directory        skip_judge false
// Everything is scoped to ctx.tenantId; the creator (ctx.principal.subject) owns a new volume. Failures are tool
// results: InvalidArguments, NOT_FOUND, ALREADY_EXISTS, DirectoryNotEmpty, IsADirectory, NotADirectory, StorageFull
// (ENOSPC: nothing was written), PathOutsideBoundary (a path leaving the volume).
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { StorageClass, VolumeService } from '../../volumes/service.ts';
import type { ToolDefinition, ToolOutcome } from '../types.ts';
import { fail, ok, schema } from './util.ts';

export interface VolumeToolsDeps {
  volumes: VolumeService;
}

/** What orch.file.read answers in one piece; larger files are read with offset and length. */
const MAX_TOOL_READ = 10 * 1024 * 1024;

function bad(tool: string, field: string, what: string): never {
  throw new OrchError(Errors.BAD_REQUEST, `argument "${field}" of tool ${tool} ${what}`);
}

function reqString(tool: string, args: Record<string, unknown>, field: string): string {
  const v = args[field];
  if (typeof v !== 'string') bad(tool, field, 'must be a string');
  if (v === '') bad(tool, field, 'must not be empty');
  return v;
}

function optInt(tool: string, args: Record<string, unknown>, field: string): number | undefined {
  const v = args[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) bad(tool, field, 'must be a non-negative integer');
  return v;
}

function optBool(tool: string, args: Record<string, unknown>, field: string): boolean | undefined {
  const v = args[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') bad(tool, field, 'must be a boolean');
  return v;
}

function encodingOf(tool: string, args: Record<string, unknown>): 'utf8' | 'base64' {
  const v = args.encoding;
  if (v === undefined || v === null || v === 'utf8' || v === 'utf-8') return 'utf8';
  if (v === 'base64') return 'base64';
  return bad(tool, 'encoding', 'must be "utf8" or "base64"');
}

const volumeId = { type: 'string', description: 'the volume id (a UUID)' };
const filePath = { type: 'string', description: 'path inside the volume, e.g. /data/a.txt' };

/** The seed's names for filesystem failures (as the fs.* tools answer them), from the errno in details.code. */
const BY_ERRNO: Record<string, string> = {
  ENOTEMPTY: 'DirectoryNotEmpty',
  EISDIR: 'IsADirectory',
  ENOTDIR: 'NotADirectory',
};

function withErrnoNames(def: ToolDefinition): ToolDefinition {
  return {
    ...def,
    handler: async (ctx, args): Promise<ToolOutcome> => {
      try {
        return await def.handler(ctx, args);
      } catch (err) {
        const code = err instanceof OrchError ? (err.details as { code?: unknown } | undefined)?.code : undefined;
        const name = typeof code === 'string' ? BY_ERRNO[code] : undefined;
        if (name && err instanceof OrchError) return fail(name, err.message);
        throw err;
      }
    },
  };
}

export function volumeTools(deps: VolumeToolsDeps): ToolDefinition[] {
  return definitions(deps).map(withErrnoNames);
}

function definitions(deps: VolumeToolsDeps): ToolDefinition[] {
  const { volumes } = deps;
  return [
    {
      name: 'orch.volume.create',
      description: 'Create a volume (label, size_limit_bytes; optional storage_class ephemeral|persistent, ttl_hours for ephemeral).',
      inputSchema: schema(
        {
          label: { type: 'string' },
          size_limit_bytes: { type: 'integer', minimum: 1 },
          storage_class: { type: 'string', enum: ['ephemeral', 'persistent'], default: 'persistent' },
          ttl_hours: { type: 'integer', minimum: 1, description: 'ephemeral only; default 24' },
        },
        ['label', 'size_limit_bytes'],
      ),
      required: ['label', 'size_limit_bytes'],
      skipJudge: false,
      handler: async (ctx, args) => {
        const tool = 'orch.volume.create';
        const label = reqString(tool, args, 'label');
        const limit = args.size_limit_bytes;
        if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit <= 0) bad(tool, 'size_limit_bytes', 'must be a positive integer');
        const sc = args.storage_class;
        if (sc !== undefined && sc !== null && sc !== 'ephemeral' && sc !== 'persistent') bad(tool, 'storage_class', 'must be "ephemeral" or "persistent"');
        const ttl = optInt(tool, args, 'ttl_hours');
        const v = await volumes.create({
          tenantId: ctx.tenantId,
          ownerSubject: ctx.principal.subject,
          label,
          sizeLimitBytes: limit,
          ...(typeof sc === 'string' ? { storageClass: sc as StorageClass } : {}),
          ...(ttl !== undefined ? { ttlHours: ttl } : {}),
        });
        return ok(v);
      },
    },
    {
      name: 'orch.volume.list',
      description: 'List the volumes of the tenant.',
      inputSchema: schema({}),
      required: [],
      skipJudge: true,
      handler: async (ctx) => {
        const list = await volumes.list(ctx.tenantId, { limit: 1000 });
        return ok({ volumes: list, total: list.length });
      },
    },
    {
      name: 'orch.volume.delete',
      description: 'Delete a volume and everything in it.',
      inputSchema: schema({ volume_id: volumeId }, ['volume_id']),
      required: ['volume_id'],
      skipJudge: false,
      handler: async (ctx, args) => {
        const id = reqString('orch.volume.delete', args, 'volume_id');
        await volumes.delete(ctx.tenantId, id);
        return ok({ deleted: true, volume_id: id });
      },
    },
    {
      name: 'orch.volume.quota',
      description: "Usage of a volume (size limit, used bytes, file count); without volume_id, of every volume of the tenant.",
      inputSchema: schema({ volume_id: volumeId }),
      required: [],
      skipJudge: true,
      handler: async (ctx, args) => {
        if (args.volume_id !== undefined && args.volume_id !== null) {
          return ok(await volumes.quota(ctx.tenantId, reqString('orch.volume.quota', args, 'volume_id')));
        }
        const list = await volumes.list(ctx.tenantId, { limit: 1000 });
        const quotas = [];
        for (const v of list) quotas.push({ label: v.label, ...(await volumes.quota(ctx.tenantId, v.id)) });
        return ok({ quotas });
      },
    },
    {
      name: 'orch.file.list',
      description: 'List a directory of a volume.',
      inputSchema: schema({ volume_id: volumeId, path: filePath }, ['volume_id', 'path']),
      required: ['volume_id', 'path'],
      skipJudge: true,
      handler: async (ctx, args) => {
        const tool = 'orch.file.list';
        const id = reqString(tool, args, 'volume_id');
        const p = typeof args.path === 'string' && args.path !== '' ? args.path : '/';
        return ok({ path: p, entries: await volumes.listDir(ctx.tenantId, id, p) });
      },
    },
    {
      name: 'orch.file.read',
      description: 'Read a file of a volume (optional offset and length; encoding utf8 or base64).',
      inputSchema: schema(
        {
          volume_id: volumeId,
          path: filePath,
          offset: { type: 'integer', minimum: 0 },
          length: { type: 'integer', minimum: 0 },
          encoding: { type: 'string', enum: ['utf8', 'base64'], default: 'utf8' },
        },
        ['volume_id', 'path'],
      ),
      required: ['volume_id', 'path'],
      skipJudge: true,
      handler: async (ctx, args) => {
        const tool = 'orch.file.read';
        const id = reqString(tool, args, 'volume_id');
        const p = reqString(tool, args, 'path');
        const offset = optInt(tool, args, 'offset');
        const length = optInt(tool, args, 'length');
        const encoding = encodingOf(tool, args);
        let data: Buffer;
        if (offset !== undefined || length !== undefined) {
          const want = length ?? MAX_TOOL_READ;
          if (want > MAX_TOOL_READ) bad(tool, 'length', `must be at most ${MAX_TOOL_READ}`);
          data = await volumes.readFile(ctx.tenantId, id, p, { offset: offset ?? 0, length: want });
        } else {
          const st = await volumes.stat(ctx.tenantId, id, p);
          if (st.size > MAX_TOOL_READ) {
            throw new OrchError(Errors.BAD_REQUEST, `${st.path} is ${st.size} bytes; read it in parts with offset and length (at most ${MAX_TOOL_READ} bytes each)`);
          }
          data = await volumes.readFile(ctx.tenantId, id, p);
        }
        return ok({ path: p, encoding, bytes: data.length, content: data.toString(encoding) });
      },
    },
    {
      name: 'orch.file.write',
      description: 'Create or overwrite a file of a volume (content as utf8 text, or base64 with encoding=base64); fails with StorageFull when the volume has no room.',
      inputSchema: schema(
        { volume_id: volumeId, path: filePath, content: { type: 'string' }, encoding: { type: 'string', enum: ['utf8', 'base64'], default: 'utf8' } },
        ['volume_id', 'path', 'content'],
      ),
      required: ['volume_id', 'path', 'content'],
      skipJudge: false,
      handler: async (ctx, args) => {
        const tool = 'orch.file.write';
        const id = reqString(tool, args, 'volume_id');
        const p = reqString(tool, args, 'path');
        if (typeof args.content !== 'string') bad(tool, 'content', 'must be a string');
        const encoding = encodingOf(tool, args);
        if (encoding === 'base64' && !/^[A-Za-z0-9+/]*={0,2}$/.test(args.content.replace(/\s+/g, ''))) bad(tool, 'content', 'is not valid base64');
        const data = Buffer.from(args.content, encoding);
        return ok(await volumes.writeFile(ctx.tenantId, id, p, data));
      },
    },
    {
      name: 'orch.file.delete',
      description: 'Delete a file or a directory of a volume (a non-empty directory only with recursive=true).',
      inputSchema: schema({ volume_id: volumeId, path: filePath, recursive: { type: 'boolean', default: false } }, ['volume_id', 'path']),
      required: ['volume_id', 'path'],
      skipJudge: false,
      handler: async (ctx, args) => {
        const tool = 'orch.file.delete';
        const recursive = optBool(tool, args, 'recursive') ?? false;
        return ok(await volumes.remove(ctx.tenantId, reqString(tool, args, 'volume_id'), reqString(tool, args, 'path'), { recursive }));
      },
    },
    {
      name: 'orch.file.mkdir',
      description: 'Create a directory (and its parents) in a volume; an existing directory is fine.',
      inputSchema: schema({ volume_id: volumeId, path: filePath }, ['volume_id', 'path']),
      required: ['volume_id', 'path'],
      skipJudge: false,
      handler: async (ctx, args) => {
        const tool = 'orch.file.mkdir';
        return ok(await volumes.mkdir(ctx.tenantId, reqString(tool, args, 'volume_id'), reqString(tool, args, 'path'), { parents: true }));
      },
    },
  ];
}
