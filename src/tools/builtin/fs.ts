// The filesystem tools of seed 001 (fs.read, write, list, create_dir, delete, edit, multi_edit, grep, glob). They work
// on the caller's volumes: a sandbox path (absolute, or relative to the workdir) is mapped onto the host directory
// of the mount that holds it. Checks, in order: a mount holds the path (`..` is normalised away first), the
// context's filesystem allowlist, read-only mounts for writes (PERMISSION_DENIED), and symlinks — the real path of
// the target and of its nearest existing parent must stay inside the mount's real path (PathOutsideBoundary).
// Errors of the operating system (ENOENT, EACCES, ENOSPC) are thrown and mapped by the catalog.
// A mount that carries a volume id (an execution's spec.volumes, src/agents/execution/volumes.ts) is served through
// the VolumeService instead of the host directory by fs.read, write, list, create_dir, delete, edit and multi_edit:
// the same quota (StorageFull, nothing half-written), the same symlink containment, and a StorageEvent per call as
// the FSAL records them (docs/FSAL.md "Executions and volumes"). fs.grep and fs.glob read the mount's host path.
import { lstat, mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import fg from 'fast-glob';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { EventBus } from '../../bus/bus.ts';
import { OrchError } from '../../errors/catalog.ts';
import { recordStorageEvent, type FsalOperation } from '../../fsal/events.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Db } from '../../storage/db.ts';
import type { VolumeService } from '../../volumes/service.ts';
import { isToolError, mapPath, resolveVolumePath, workdirOf, type ResolvedPath } from '../paths.ts';
import type { ToolCallContext, ToolDefinition, ToolError, ToolOutcome, VolumeMount } from '../types.ts';
import { bool, fail, ok, schema, str } from './util.ts';
import { GREP_LIMITS, grepInWorker, MAX_PATTERN_LENGTH } from './regex-worker.ts';
import { linearRegExp } from '../../util/linear-regexp.ts';

type Handler = (ctx: ToolCallContext, args: Record<string, unknown>) => Promise<ToolOutcome>;

/** What volume-backed mounts need: the node's VolumeService, and the database (and bus) for StorageEvents. */
export interface FsToolsDeps {
  volumes?: VolumeService;
  db?: Db;
  bus?: EventBus;
  logger?: Logger;
}

/** A path of a volume-backed mount: the volume and the path inside it. */
export interface VolumeTarget {
  volumes: VolumeService;
  tenantId: string;
  volumeId: string;
  /** `/`-rooted path inside the volume. */
  rel: string;
  sandbox: string;
  mount: VolumeMount;
}

type VolumeBody = (t: VolumeTarget, args: Record<string, unknown>, run: VolumeRunner) => Promise<ToolOutcome>;
/** Runs one volume operation and records its StorageEvent, allowed or refused. */
type VolumeRunner = <T>(op: FsalOperation, fn: () => Promise<T>, bytes?: (r: T) => number) => Promise<T>;

/** The seed's names for filesystem failures, from the errno the VolumeService puts in details.code. */
const BY_ERRNO: Record<string, string> = { ENOTEMPTY: 'DirectoryNotEmpty', EISDIR: 'IsADirectory', ENOTDIR: 'NotADirectory' };

/** The gRPC status name an FSAL call would have answered (docs/FSAL.md "Errors"). */
function statusName(err: unknown): string {
  if (err instanceof OrchError) {
    const code = (err.details as { code?: unknown } | undefined)?.code;
    if (typeof code === 'string' && code in BY_ERRNO) return 'FAILED_PRECONDITION';
    return GrpcStatus[err.spec.grpc] ?? 'UNKNOWN';
  }
  return 'INTERNAL';
}

class VolumeFailure extends Error {
  constructor(readonly outcome: ToolOutcome) {
    super('volume operation failed');
  }
}

function volumeRunner(deps: FsToolsDeps, ctx: ToolCallContext, t: VolumeTarget): VolumeRunner {
  return async (op, fn, bytes) => {
    const record = async (status: string, n = 0, error?: string): Promise<void> => {
      // An event needs an execution (StorageEvents are per execution); other callers have no volume-backed mounts.
      if (!deps.db || !ctx.executionId) return;
      await recordStorageEvent(deps.db, deps.bus, {
        volume_id: t.volumeId,
        tenant_id: t.tenantId,
        execution_id: ctx.executionId,
        operation: op,
        path: t.rel,
        bytes: n,
        status,
        ...(error ? { error } : {}),
      }).catch((err: unknown) => deps.logger?.warn({ err, volume: t.volumeId, op }, 'recording a storage event failed'));
    };
    let result;
    try {
      result = await fn();
    } catch (err) {
      await record(statusName(err), 0, err instanceof Error ? err.message : String(err));
      const code = err instanceof OrchError ? (err.details as { code?: unknown } | undefined)?.code : undefined;
      const name = typeof code === 'string' ? BY_ERRNO[code] : undefined;
      if (name && err instanceof OrchError) throw new VolumeFailure({ ok: false, error: { error: name, message: err.message } });
      throw err;
    }
    await record('OK', bytes ? bytes(result) : 0);
    return result;
  };
}

function volumeTargetOf(deps: FsToolsDeps, ctx: ToolCallContext, p: ResolvedPath): VolumeTarget | undefined {
  if (!deps.volumes || !p.mount.volumeId) return undefined;
  const rel = `/${path.posix.relative(p.mount.sandboxPath, p.sandbox)}`;
  return { volumes: deps.volumes, tenantId: ctx.tenantId, volumeId: p.mount.volumeId, rel: rel === '/' ? '/' : rel, sandbox: p.sandbox, mount: p.mount };
}

/**
 * Wraps a handler body that needs one resolved path. On a volume-backed mount with `volumeBody`, the lexical
 * checks (mount, allowlist, read-only) are made here and the VolumeService does the rest (symlinks, quota).
 */
function withPath(
  mode: 'read' | 'write',
  body: (p: ResolvedPath, args: Record<string, unknown>, ctx: ToolCallContext) => Promise<ToolOutcome>,
  pathArg = 'path',
  volume?: { deps: FsToolsDeps; body: VolumeBody },
): Handler {
  return async (ctx, args) => {
    const requested = typeof args[pathArg] === 'string' && args[pathArg] !== '' ? (args[pathArg] as string) : workdirOf(ctx);
    if (volume) {
      const mapped = mapPath(ctx, requested, mode);
      if (isToolError(mapped)) return { ok: false, error: mapped };
      const t = volumeTargetOf(volume.deps, ctx, mapped);
      if (t) {
        try {
          return await volume.body(t, args, volumeRunner(volume.deps, ctx, t));
        } catch (err) {
          if (err instanceof VolumeFailure) return err.outcome;
          throw err;
        }
      }
    }
    const p = await resolveVolumePath(ctx, requested, mode);
    if (isToolError(p)) return { ok: false, error: p };
    return body(p, args, ctx);
  };
}

/** fs.edit / fs.multi_edit on a volume: read, apply, write back whole (atomic, quota-checked). */
async function editOnVolume(t: VolumeTarget, run: VolumeRunner, apply: (text: string) => { text: string } | ToolOutcome, done: string): Promise<ToolOutcome> {
  const buf = await run('read', () => t.volumes.readFile(t.tenantId, t.volumeId, t.rel), (b) => b.length);
  const edited = apply(buf.toString('utf8'));
  if ('ok' in edited) return edited;
  await run('write', () => t.volumes.writeFile(t.tenantId, t.volumeId, t.rel, edited.text), (r) => r.bytes_written);
  return ok(done);
}

const MAX_GREP_MATCHES = 1000;
const MAX_GREP_FILE_BYTES = 5 * 1024 * 1024;
const MAX_GLOB_RESULTS = 10_000;

function countOccurrences(text: string, target: string): number {
  return target === '' ? 0 : text.split(target).length - 1;
}

/** Writes through a temporary file and a rename, so a reader never sees half a file. */
async function writeAtomic(file: string, content: string): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.orch-${process.pid}-${Date.now()}.tmp`);
  await writeFile(tmp, content);
  try {
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

async function grepFiles(host: string, recursive: boolean, out: string[]): Promise<void> {
  const st = await lstat(host);
  if (st.isFile()) {
    out.push(host);
    return;
  }
  if (!st.isDirectory()) return;
  const entries = await readdir(host, { withFileTypes: true });
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    const p = path.join(host, e.name);
    // Symbolic links are not followed: they may point outside the volume.
    if (e.isFile()) out.push(p);
    else if (e.isDirectory() && recursive && e.name !== '.git' && e.name !== 'node_modules') await grepFiles(p, recursive, out);
  }
}

/** fs.edit: the one exact occurrence of target_content replaced. */
function applyEdit(text: string, args: Record<string, unknown>, shown: string): { text: string } | ToolOutcome {
  const target = str(args.target_content);
  const count = countOccurrences(text, target);
  if (count !== 1) return fail('EditFailed', `target_content matches ${count} places in ${shown}; it must match exactly one`);
  const replacement = str(args.replacement_content);
  return { text: text.replace(target, () => replacement) };
}

function editDone(shown: string, args: Record<string, unknown>): string {
  const target = str(args.target_content);
  const replacement = str(args.replacement_content);
  return `edited ${shown}: 1 replacement (${target.split('\n').length} line(s) replaced by ${replacement.split('\n').length})`;
}

/** fs.multi_edit: every edit in order, or none. */
function checkEdits(args: Record<string, unknown>): ToolOutcome | undefined {
  if (!Array.isArray(args.edits) || args.edits.length === 0) {
    return fail('InvalidArguments', 'argument "edits" of tool fs.multi_edit must be a non-empty array of {target_content, replacement_content}');
  }
  return undefined;
}

function applyMultiEdit(text: string, args: Record<string, unknown>, shown: string): { text: string } | ToolOutcome {
  for (const [i, raw] of (args.edits as unknown[]).entries()) {
    const e = (raw ?? {}) as Record<string, unknown>;
    if (typeof e.target_content !== 'string' || typeof e.replacement_content !== 'string') {
      return fail('InvalidArguments', `edit ${i + 1} of tool fs.multi_edit needs string target_content and replacement_content`);
    }
    const count = countOccurrences(text, e.target_content);
    if (count !== 1) {
      return fail('EditFailed', `edit ${i + 1}: target_content matches ${count} places in ${shown}; it must match exactly one. No edit was applied.`);
    }
    const replacement = e.replacement_content;
    text = text.replace(e.target_content, () => replacement);
  }
  return { text };
}

export function fsTools(deps: FsToolsDeps = {}): ToolDefinition[] {
  const onVolume = (body: VolumeBody): { deps: FsToolsDeps; body: VolumeBody } => ({ deps, body });
  return [
    {
      name: 'fs.read',
      description: 'Read a file from the workspace and return its contents.',
      inputSchema: schema({ path: { type: 'string', description: 'absolute or relative POSIX path' } }, ['path']),
      required: ['path'],
      skipJudge: true,
      handler: withPath(
        'read',
        async (p) => ok(await readFile(p.host, 'utf8')),
        'path',
        onVolume(async (t, _args, run) => {
          const buf = await run('read', () => t.volumes.readFile(t.tenantId, t.volumeId, t.rel), (b) => b.length);
          return ok(buf.toString('utf8'));
        }),
      ),
    },
    {
      name: 'fs.write',
      description: 'Create or overwrite a file in the workspace.',
      inputSchema: schema({ path: { type: 'string' }, content: { type: 'string' } }, ['path', 'content']),
      required: ['path', 'content'],
      skipJudge: false,
      handler: withPath('write', async (p, args) => {
        const content = str(args.content);
        await mkdir(path.dirname(p.host), { recursive: true });
        await writeFile(p.host, content);
        return ok(`wrote ${Buffer.byteLength(content)} bytes to ${p.sandbox}`);
      }, 'path', onVolume(async (t, args, run) => {
        const content = str(args.content);
        await run('write', () => t.volumes.writeFile(t.tenantId, t.volumeId, t.rel, content, { createParents: true }), (r) => r.bytes_written);
        return ok(`wrote ${Buffer.byteLength(content)} bytes to ${t.sandbox}`);
      })),
    },
    {
      name: 'fs.list',
      description: 'List a directory; subdirectories end with /.',
      inputSchema: schema({ path: { type: 'string', description: 'directory (default: the workspace)' } }),
      required: [],
      skipJudge: true,
      handler: withPath('read', async (p) => {
        const entries = await readdir(p.host, { withFileTypes: true });
        return ok(entries.map((e) => (e.isDirectory() ? `${e.name}/` : e.name)).sort().join('\n'));
      }, 'path', onVolume(async (t, _args, run) => {
        const entries = await run('readdir', () => t.volumes.listDir(t.tenantId, t.volumeId, t.rel));
        return ok(entries.map((e) => (e.type === 'directory' ? `${e.name}/` : e.name)).sort().join('\n'));
      })),
    },
    {
      name: 'fs.create_dir',
      description: 'Create a directory and its parents; an existing directory is fine.',
      inputSchema: schema({ path: { type: 'string' } }, ['path']),
      required: ['path'],
      skipJudge: false,
      handler: withPath('write', async (p) => {
        await mkdir(p.host, { recursive: true });
        return ok(`created ${p.sandbox}`);
      }, 'path', onVolume(async (t, _args, run) => {
        await run('mkdir', () => t.volumes.mkdir(t.tenantId, t.volumeId, t.rel, { parents: true }));
        return ok(`created ${t.sandbox}`);
      })),
    },
    {
      name: 'fs.delete',
      description: 'Delete a file, or a directory (a non-empty one only with recursive=true).',
      inputSchema: schema({ path: { type: 'string' }, recursive: { type: 'boolean', default: false } }, ['path']),
      required: ['path'],
      skipJudge: false,
      handler: withPath('write', async (p, args) => {
        if (p.sandbox === p.mount.sandboxPath) return fail('PERMISSION_DENIED', `${p.sandbox} is the root of a volume and cannot be deleted`);
        const st = await lstat(p.host);
        if (st.isDirectory() && !bool(args.recursive, false) && (await readdir(p.host)).length > 0) {
          return fail('DirectoryNotEmpty', `${p.sandbox} is a non-empty directory; pass recursive=true`);
        }
        await rm(p.host, { recursive: true });
        return ok(`deleted ${p.sandbox}`);
      }, 'path', onVolume(async (t, args, run) => {
        if (t.sandbox === t.mount.sandboxPath) return fail('PERMISSION_DENIED', `${t.sandbox} is the root of a volume and cannot be deleted`);
        await run('remove', () => t.volumes.remove(t.tenantId, t.volumeId, t.rel, { recursive: bool(args.recursive, false) }), (r) => r.freed_bytes);
        return ok(`deleted ${t.sandbox}`);
      })),
    },
    {
      name: 'fs.edit',
      description: 'Replace the one exact occurrence of target_content in a file with replacement_content.',
      inputSchema: schema(
        { path: { type: 'string' }, target_content: { type: 'string' }, replacement_content: { type: 'string' } },
        ['path', 'target_content', 'replacement_content'],
      ),
      required: ['path', 'target_content', 'replacement_content'],
      skipJudge: false,
      handler: withPath(
        'write',
        async (p, args) => {
          const edited = applyEdit(await readFile(p.host, 'utf8'), args, p.sandbox);
          if ('ok' in edited) return edited;
          await writeAtomic(p.host, edited.text);
          return ok(editDone(p.sandbox, args));
        },
        'path',
        onVolume((t, args, run) => editOnVolume(t, run, (text) => applyEdit(text, args, t.sandbox), editDone(t.sandbox, args))),
      ),
    },
    {
      name: 'fs.multi_edit',
      description: 'Apply several exact-match edits to one file in order; if any edit fails, the file is left unchanged.',
      inputSchema: schema(
        {
          path: { type: 'string' },
          edits: {
            type: 'array',
            items: schema({ target_content: { type: 'string' }, replacement_content: { type: 'string' } }, ['target_content', 'replacement_content']),
          },
        },
        ['path', 'edits'],
      ),
      required: ['path', 'edits'],
      skipJudge: false,
      handler: withPath(
        'write',
        async (p, args) => {
          const bad = checkEdits(args);
          if (bad) return bad;
          const edited = applyMultiEdit(await readFile(p.host, 'utf8'), args, p.sandbox);
          if ('ok' in edited) return edited;
          await writeAtomic(p.host, edited.text);
          return ok(`edited ${p.sandbox}: ${(args.edits as unknown[]).length} replacement(s)`);
        },
        'path',
        onVolume(async (t, args, run) =>
          checkEdits(args) ?? editOnVolume(t, run, (text) => applyMultiEdit(text, args, t.sandbox), `edited ${t.sandbox}: ${Array.isArray(args.edits) ? args.edits.length : 0} replacement(s)`),
        ),
      ),
    },
    {
      name: 'fs.grep',
      description: 'Search files under a directory (recursively) for a regular expression; answers path:line: text per match.',
      inputSchema: schema({ pattern: { type: 'string', description: 'regular expression (RE2 syntax: JavaScript\'s without lookaround or backreferences)' }, path: { type: 'string' }, recursive: { type: 'boolean', default: true } }, [
        'pattern',
        'path',
      ]),
      required: ['pattern', 'path'],
      skipJudge: true,
      handler: withPath('read', async (p, args) => {
        const pattern = str(args.pattern);
        if (pattern.length > MAX_PATTERN_LENGTH) return fail('InvalidArguments', `pattern of tool fs.grep is longer than ${MAX_PATTERN_LENGTH} characters`);
        try {
          linearRegExp(pattern); // syntax only (compiling is linear too); the worker compiles its own
        } catch (err) {
          return fail('InvalidArguments', `pattern of tool fs.grep: ${(err as Error).message}`);
        }
        const files: string[] = [];
        await grepFiles(p.host, bool(args.recursive, true), files);
        const shown = (f: string): string => path.posix.join(p.mount.sandboxPath, path.relative(p.mount.hostPath, f).split(path.sep).join('/'));
        // Matching runs on RE2 (linear time) in a worker under a watchdog (regex-worker.ts): no pattern can hold the node.
        const found = await grepInWorker(pattern, files.map((f) => ({ host: f, shown: shown(f) })), { ...GREP_LIMITS, maxMatches: MAX_GREP_MATCHES, maxFileBytes: MAX_GREP_FILE_BYTES });
        if (!found.ok) return fail('Timeout', `fs.grep: ${found.message}`);
        const { lines, truncated } = found;
        if (lines.length === 0) return ok('no matches');
        return ok(lines.join('\n') + (truncated ? `\n… (stopped after ${MAX_GREP_MATCHES} matches)` : ''));
      }),
    },
    {
      name: 'fs.glob',
      description: 'Find files under a directory matching a glob pattern (recursive; `*.ts` matches at any depth); answers paths relative to the directory.',
      inputSchema: schema({ pattern: { type: 'string', description: 'glob such as **/*.ts or src/*.js' }, path: { type: 'string' } }, ['pattern', 'path']),
      required: ['pattern', 'path'],
      skipJudge: true,
      handler: withPath('read', async (p, args) => {
        const pattern = str(args.pattern);
        if (pattern.startsWith('/') || pattern.split('/').includes('..')) {
          return fail('PathOutsideBoundary', `glob pattern ${pattern} must be relative to path and stay under it`);
        }
        const found = await fg(pattern, { cwd: p.host, dot: true, followSymbolicLinks: false, baseNameMatch: !pattern.includes('/'), onlyFiles: true, suppressErrors: true });
        found.sort();
        return ok(found.slice(0, MAX_GLOB_RESULTS).join('\n'));
      }),
    },
  ];
}
