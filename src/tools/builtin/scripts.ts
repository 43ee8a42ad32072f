// Script tools (seed 001 "Script tools"): saved TypeScript programs of a tenant, with their version history.
//   orch.script.save    name, code (+ tags, description)  → a new script at version 1      skip_judge false
//   orch.script.list    optional tag, q (substring of name or description)                 skip_judge true
//   orch.script.get     id → the script, its current code and every version               skip_judge true
//   orch.script.update  id, name, code (+ tags, description) → version + 1, old one kept    skip_judge false
//   orch.script.delete  id → soft delete: gone from list and get                          skip_judge false
// Everything is scoped to ctx.tenantId; the owner (ctx.principal.subject) is recorded on save and each version
// records who wrote it. Arguments are validated before any write; each write runs in one db.tx. Failures are
// tool results: InvalidArguments, NOT_FOUND, ALREADY_EXISTS (a name already used in the tenant).
import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../../storage/db.ts';
import type { ToolDefinition, ToolOutcome } from '../types.ts';
import { fail, ok, schema } from './util.ts';

export interface ScriptToolsDeps {
  db: Db;
}

const MAX_NAME = 200;
const MAX_DESCRIPTION = 4000;
const MAX_TAGS = 50;
const MAX_TAG = 100;
/** 1 MiB of code per version. */
const MAX_CODE = 1024 * 1024;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Prefix of a deleted script's rewritten name; a caller's name cannot start with `~`. */
const DELETED_PREFIX = '~deleted~';

interface ScriptRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string | null;
  tags: unknown;
  current_version: number;
  owner_subject: string;
  created_at: Date;
  updated_at: Date;
}

interface VersionRow {
  version: number;
  code: string;
  created_at: Date;
  created_by: string;
}

class ArgError extends Error {}

const iso = (d: unknown): string => (d instanceof Date ? d.toISOString() : String(d));

function invalid(tool: string, field: string, what: string): never {
  throw new ArgError(`argument "${field}" of tool ${tool} ${what}`);
}

function reqString(tool: string, args: Record<string, unknown>, field: string, max: number): string {
  const v = args[field];
  if (typeof v !== 'string') invalid(tool, field, 'must be a string');
  if (v.trim() === '') invalid(tool, field, 'must not be empty');
  if (v.length > max) invalid(tool, field, `must be at most ${max} characters`);
  return v;
}

function optString(tool: string, args: Record<string, unknown>, field: string, max: number): string | undefined {
  const v = args[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') invalid(tool, field, 'must be a string');
  if (v.length > max) invalid(tool, field, `must be at most ${max} characters`);
  return v;
}

function scriptName(tool: string, args: Record<string, unknown>): string {
  const name = reqString(tool, args, 'name', MAX_NAME).trim();
  if (name.startsWith('~')) invalid(tool, 'name', 'must not start with "~"');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) invalid(tool, 'name', 'must not contain control characters');
  return name;
}

function optTags(tool: string, args: Record<string, unknown>): string[] | undefined {
  const v = args.tags;
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) invalid(tool, 'tags', 'must be an array of strings');
  if (v.length > MAX_TAGS) invalid(tool, 'tags', `must have at most ${MAX_TAGS} entries`);
  const out: string[] = [];
  for (const t of v) {
    if (typeof t !== 'string' || t.trim() === '') invalid(tool, 'tags', 'must be an array of non-empty strings');
    if (t.length > MAX_TAG) invalid(tool, 'tags', `entries must be at most ${MAX_TAG} characters`);
    if (!out.includes(t.trim())) out.push(t.trim());
  }
  return out;
}

function scriptId(tool: string, args: Record<string, unknown>): string {
  const v = args.id;
  if (typeof v !== 'string') invalid(tool, 'id', 'must be a string');
  return v.trim();
}

function code(tool: string, args: Record<string, unknown>): string {
  return reqString(tool, args, 'code', MAX_CODE);
}

function tagsOf(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((t): t is string => typeof t === 'string') : [];
}

function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505';
}

const notFound = (id: string): ToolOutcome => fail('NOT_FOUND', `script ${id} not found`);
const duplicate = (name: string): ToolOutcome => fail('ALREADY_EXISTS', `a script named "${name}" already exists in this tenant`);

function summary(r: ScriptRow): Record<string, unknown> {
  return {
    id: r.id,
    name: r.name,
    description: r.description ?? '',
    tags: tagsOf(r.tags),
    version: r.current_version,
    owner: r.owner_subject,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

const SCRIPT_COLUMNS = 'id, tenant_id, name, description, tags, current_version, owner_subject, created_at, updated_at';

async function liveScript(q: Queryable, tenantId: string, id: string): Promise<ScriptRow | undefined> {
  if (!UUID.test(id)) return undefined;
  const r = await q.query<ScriptRow>(`SELECT ${SCRIPT_COLUMNS} FROM scripts WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL`, [id, tenantId]);
  return r.rows[0];
}

async function nameTaken(q: Queryable, tenantId: string, name: string, exceptId?: string): Promise<boolean> {
  const r = await q.query<{ id: string }>('SELECT id FROM scripts WHERE tenant_id = $1 AND name = $2', [tenantId, name]);
  return r.rows.some((row) => row.id !== exceptId);
}

/** Runs a handler body: argument errors become InvalidArguments, a unique violation ALREADY_EXISTS. */
async function guarded(name: () => string | undefined, body: () => Promise<ToolOutcome>): Promise<ToolOutcome> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof ArgError) return fail('InvalidArguments', err.message);
    if (isUniqueViolation(err)) return duplicate(name() ?? '');
    throw err;
  }
}

export function scriptTools(deps: ScriptToolsDeps): ToolDefinition[] {
  const { db } = deps;
  const editable = {
    name: { type: 'string', description: 'script name, unique in the tenant' },
    code: { type: 'string', description: 'the TypeScript program' },
    description: { type: 'string' },
    tags: { type: 'array', items: { type: 'string' } },
  };
  return [
    {
      name: 'orch.script.save',
      description: 'Save a new TypeScript script (name, code; optional tags and description) at version 1.',
      inputSchema: schema(editable, ['name', 'code']),
      required: ['name', 'code'],
      skipJudge: false,
      handler: async (ctx, args) => {
        let name: string | undefined;
        return guarded(() => name, async () => {
          const tool = 'orch.script.save';
          name = scriptName(tool, args);
          const body = code(tool, args);
          const description = optString(tool, args, 'description', MAX_DESCRIPTION);
          const tags = optTags(tool, args) ?? [];
          const id = randomUUID();
          const owner = ctx.principal.subject;
          const row = await db.tx(async (tx) => {
            if (await nameTaken(tx, ctx.tenantId, name!)) return undefined;
            const r = await tx.query<ScriptRow>(
              `INSERT INTO scripts (id, tenant_id, name, description, tags, current_version, owner_subject)
               VALUES ($1, $2, $3, $4, $5::jsonb, 1, $6) RETURNING ${SCRIPT_COLUMNS}`,
              [id, ctx.tenantId, name, description ?? null, JSON.stringify(tags), owner],
            );
            await tx.query('INSERT INTO script_versions (script_id, version, code, created_by) VALUES ($1, 1, $2, $3)', [id, body, owner]);
            return r.rows[0];
          });
          if (!row) return duplicate(name);
          return ok({ tool, ...summary(row) });
        });
      },
    },
    {
      name: 'orch.script.list',
      description: 'List the saved scripts of the tenant (optional tag filter and q, a substring of name or description).',
      inputSchema: schema({ tag: { type: 'string' }, q: { type: 'string', description: 'substring of name or description' } }),
      required: [],
      skipJudge: true,
      handler: async (ctx, args) =>
        guarded(() => undefined, async () => {
          const tool = 'orch.script.list';
          const tag = optString(tool, args, 'tag', MAX_TAG);
          const q = optString(tool, args, 'q', MAX_NAME);
          const params: unknown[] = [ctx.tenantId];
          let where = 'tenant_id = $1 AND deleted_at IS NULL';
          if (tag !== undefined && tag.trim() !== '') {
            params.push(JSON.stringify([tag.trim()]));
            where += ` AND tags @> $${params.length}::jsonb`;
          }
          if (q !== undefined && q !== '') {
            params.push(q.toLowerCase());
            where += ` AND (strpos(lower(name), $${params.length}) > 0 OR strpos(lower(COALESCE(description, '')), $${params.length}) > 0)`;
          }
          const r = await db.query<ScriptRow>(`SELECT ${SCRIPT_COLUMNS} FROM scripts WHERE ${where} ORDER BY name`, params);
          const scripts = r.rows.map(summary);
          return ok({ tool, scripts, total: scripts.length });
        }),
    },
    {
      name: 'orch.script.get',
      description: 'Get a script by id: its current code and its version history.',
      inputSchema: schema({ id: { type: 'string', description: 'script id' } }, ['id']),
      required: ['id'],
      skipJudge: true,
      handler: async (ctx, args) =>
        guarded(() => undefined, async () => {
          const tool = 'orch.script.get';
          const id = scriptId(tool, args);
          const found = await db.tx(async (tx) => {
            const row = await liveScript(tx, ctx.tenantId, id);
            if (!row) return undefined;
            const v = await tx.query<VersionRow>('SELECT version, code, created_at, created_by FROM script_versions WHERE script_id = $1 ORDER BY version DESC', [id]);
            return { row, versions: v.rows };
          });
          if (!found) return notFound(id);
          const current = found.versions.find((v) => v.version === found.row.current_version);
          return ok({
            tool,
            ...summary(found.row),
            code: current?.code ?? '',
            versions: found.versions.map((v) => ({ version: v.version, code: v.code, created_at: iso(v.created_at), created_by: v.created_by })),
          });
        }),
    },
    {
      name: 'orch.script.update',
      description: 'Update a script (id, name, code; optional tags and description): a new version, the old one stays in the history.',
      inputSchema: schema({ id: { type: 'string', description: 'script id' }, ...editable }, ['id', 'name', 'code']),
      required: ['id', 'name', 'code'],
      skipJudge: false,
      handler: async (ctx, args) => {
        let name: string | undefined;
        return guarded(() => name, async () => {
          const tool = 'orch.script.update';
          const id = scriptId(tool, args);
          name = scriptName(tool, args);
          const body = code(tool, args);
          const description = optString(tool, args, 'description', MAX_DESCRIPTION);
          const tags = optTags(tool, args);
          const result = await db.tx(async (tx): Promise<ScriptRow | 'not_found' | 'duplicate'> => {
            const cur = await liveScript(tx, ctx.tenantId, id);
            if (!cur) return 'not_found';
            if (await nameTaken(tx, ctx.tenantId, name!, cur.id)) return 'duplicate';
            const next = cur.current_version + 1;
            await tx.query('INSERT INTO script_versions (script_id, version, code, created_by) VALUES ($1, $2, $3, $4)', [cur.id, next, body, ctx.principal.subject]);
            const r = await tx.query<ScriptRow>(
              `UPDATE scripts SET name = $1, description = $2, tags = $3::jsonb, current_version = $4, updated_at = now()
               WHERE id = $5 AND tenant_id = $6 RETURNING ${SCRIPT_COLUMNS}`,
              [name, description !== undefined ? description : cur.description, JSON.stringify(tags ?? tagsOf(cur.tags)), next, cur.id, ctx.tenantId],
            );
            return r.rows[0] ?? 'not_found';
          });
          if (result === 'not_found') return notFound(id);
          if (result === 'duplicate') return duplicate(name);
          return ok({ tool, ...summary(result) });
        });
      },
    },
    {
      name: 'orch.script.delete',
      description: 'Delete a script (soft delete: it disappears from list and get; its name may be reused).',
      inputSchema: schema({ id: { type: 'string', description: 'script id' } }, ['id']),
      required: ['id'],
      skipJudge: false,
      handler: async (ctx, args) =>
        guarded(() => undefined, async () => {
          const tool = 'orch.script.delete';
          const id = scriptId(tool, args);
          const deleted = await db.tx(async (tx) => {
            const cur = await liveScript(tx, ctx.tenantId, id);
            if (!cur) return false;
            const r = await tx.query(
              'UPDATE scripts SET deleted_at = now(), updated_at = now(), name = $1 WHERE id = $2 AND tenant_id = $3 AND deleted_at IS NULL',
              [`${DELETED_PREFIX}${cur.id}~${cur.name}`, cur.id, ctx.tenantId],
            );
            return r.rowCount > 0;
          });
          if (!deleted) return notFound(id);
          return ok({ tool, id, deleted: true });
        }),
    },
  ];
}
