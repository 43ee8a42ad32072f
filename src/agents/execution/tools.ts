// The tools an agent's model may call inside the refinement loop, and how each runs: fs.* by the orchestrator on
// the execution's volumes (host directories mounted in the sandbox), cmd.run dispatched to the bootstrap inside the
// sandbox. Policy first (ToolNotAllowed, CommandNotAllowed, SubcommandNotAllowed, PathOutsideBoundary), then the
// work. A tool error is a result the model sees and can react to, not a failure of the execution.
// The full 86-tool catalog and SEAL are issue 4; this module serves the execution tools the loop needs now.
import { mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { LlmToolDef } from '../llm/types.ts';
import type { AgentManifest, ToolSpec } from '../manifest/types.ts';

export interface ToolError {
  error: string;
  message: string;
}

export type ToolResult = { ok: true; value: unknown } | { ok: false; error: ToolError };

export interface Mount {
  sandboxPath: string;
  hostPath: string;
  readOnly: boolean;
}

export interface CmdCeilings {
  max_output_bytes: number;
  timeout_ceiling_secs: number;
}

export interface CmdRequest {
  command: string;
  args: string[];
  cwd: string;
  timeout_secs: number;
  max_output_bytes: number;
}

export interface CmdResult {
  exit_code: number;
  stdout: string;
  stderr: string;
  duration_ms: number;
  truncated: boolean;
}

export interface ToolContext {
  manifest: AgentManifest;
  mounts: Mount[];
  /** Where relative paths start, inside the sandbox (the first mount, /workspace). */
  workdir: string;
  ceilings: CmdCeilings;
  runCommand(req: CmdRequest): Promise<CmdResult>;
}

const DEFS: Record<string, LlmToolDef> = {
  'fs.read': {
    name: 'fs.read',
    description: 'Read a file from the workspace and return its contents.',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  'fs.write': {
    name: 'fs.write',
    description: 'Create or overwrite a file in the workspace.',
    parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'] },
  },
  'fs.list': {
    name: 'fs.list',
    description: 'List a directory; subdirectories end with /.',
    parameters: { type: 'object', properties: { path: { type: 'string' } } },
  },
  'fs.create_dir': {
    name: 'fs.create_dir',
    description: 'Create a directory and its parents.',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  'fs.delete': {
    name: 'fs.delete',
    description: 'Delete a file, or a directory with recursive=true.',
    parameters: { type: 'object', properties: { path: { type: 'string' }, recursive: { type: 'boolean' } }, required: ['path'] },
  },
  'fs.edit': {
    name: 'fs.edit',
    description: 'Replace the one exact occurrence of target_content in a file with replacement_content.',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, target_content: { type: 'string' }, replacement_content: { type: 'string' } },
      required: ['path', 'target_content', 'replacement_content'],
    },
  },
  'cmd.run': {
    name: 'cmd.run',
    description: 'Run a command in the sandbox workspace. Returns stdout, stderr and exit_code.',
    parameters: {
      type: 'object',
      properties: { command: { type: 'string' }, args: { type: 'array', items: { type: 'string' } } },
      required: ['command'],
    },
  },
};

/** Tool names as the model sees them: dots are not allowed in OpenAI function names, so `fs.write` → `fs_write`. */
export function wireName(tool: string): string {
  return tool.replace(/\./g, '_');
}

function declared(manifest: AgentManifest, name: string): ToolSpec | undefined {
  return manifest.spec.tools.find((t) => t.name === name);
}

/** The definitions offered to the model: the manifest's tools that this loop can run. */
export function toolDefs(manifest: AgentManifest): LlmToolDef[] {
  return manifest.spec.tools
    .map((t) => DEFS[t.name])
    .filter((d): d is LlmToolDef => d !== undefined)
    .map((d) => ({ ...d, name: wireName(d.name) }));
}

export function toolFromWire(manifest: AgentManifest, wire: string): string {
  const match = manifest.spec.tools.find((t) => wireName(t.name) === wire || t.name === wire);
  return match?.name ?? wire.replace(/_/g, '.');
}

const fail = (error: string, message: string): ToolResult => ({ ok: false, error: { error, message } });

/** Missing or null required arguments (seed 001: a sentence naming the field and the tool). */
function missingArgument(tool: string, args: Record<string, unknown>): ToolResult | undefined {
  const required = (DEFS[tool]?.parameters.required as string[] | undefined) ?? [];
  for (const field of required) {
    if (args[field] === undefined || args[field] === null) {
      return fail('InvalidArguments', `missing required argument "${field}" for tool ${tool}`);
    }
  }
  return undefined;
}

function matchesPrefix(p: string, patterns: string[]): boolean {
  return patterns.some((pat) => {
    const base = pat.replace(/\/\*\*$|\/\*$/, '').replace(/\/+$/, '') || '/';
    return p === base || p.startsWith(base === '/' ? '/' : `${base}/`);
  });
}

/** Maps a sandbox path to the host, checking the mount table and the manifest's filesystem allowlists. */
export function resolvePath(ctx: ToolContext, requested: string, mode: 'read' | 'write'): { host: string; sandbox: string } | ToolError {
  const sandbox = path.posix.normalize(path.posix.isAbsolute(requested) ? requested : path.posix.join(ctx.workdir, requested));
  const mount = ctx.mounts
    .filter((m) => sandbox === m.sandboxPath || sandbox.startsWith(`${m.sandboxPath}/`))
    .sort((a, b) => b.sandboxPath.length - a.sandboxPath.length)[0];
  if (!mount) return { error: 'PathOutsideBoundary', message: `${requested} is outside the agent's volumes` };
  const allow = mode === 'read' ? ctx.manifest.spec.security.filesystem.read : ctx.manifest.spec.security.filesystem.write;
  if (allow.length > 0 && !matchesPrefix(sandbox, allow)) {
    return { error: 'PathOutsideBoundary', message: `${requested} is outside the ${mode} allowlist` };
  }
  if (mode === 'write' && mount.readOnly) return { error: 'PERMISSION_DENIED', message: `${mount.sandboxPath} is mounted read-only` };
  const rel = path.posix.relative(mount.sandboxPath, sandbox);
  return { host: path.join(mount.hostPath, ...rel.split('/').filter(Boolean)), sandbox };
}

function isToolError(x: unknown): x is ToolError {
  return typeof x === 'object' && x !== null && 'error' in x && 'message' in x;
}

/** Splits `node main.js` into command and args when the model put both in `command` (no shell is involved). */
function splitCommand(command: string, args: unknown): { command: string; args: string[] } {
  const given = Array.isArray(args) ? args.map(String) : [];
  if (given.length > 0 || !/\s/.test(command.trim())) return { command: command.trim(), args: given };
  const parts = command.trim().match(/"[^"]*"|'[^']*'|\S+/g) ?? [];
  const unq = parts.map((p) => p.replace(/^(["'])(.*)\1$/, '$2'));
  return { command: unq[0] ?? '', args: unq.slice(1) };
}

/** cmd.run policy of seed 001: declared tool, base command in the allowlist, first argument permitted. */
export function checkCommand(manifest: AgentManifest, command: string, args: string[]): ToolError | undefined {
  const spec = declared(manifest, 'cmd.run');
  if (!spec) return { error: 'ToolNotAllowed', message: 'cmd.run is not in spec.tools' };
  const allowlist = spec.config?.subcommand_allowlist;
  if (!allowlist) return undefined;
  const base = path.posix.basename(command);
  const subs = allowlist[base] ?? allowlist[command];
  if (!subs) return { error: 'CommandNotAllowed', message: `command ${base} is not in the subcommand_allowlist (${Object.keys(allowlist).join(', ')})` };
  if (subs.length === 0 || subs.includes('*')) return undefined;
  const first = args[0];
  if (first === undefined || !subs.includes(first)) {
    return { error: 'SubcommandNotAllowed', message: `${base} ${first ?? '(no argument)'} is not permitted; allowed: ${subs.join(', ')}` };
  }
  return undefined;
}

export async function runTool(ctx: ToolContext, tool: string, args: Record<string, unknown>): Promise<ToolResult> {
  if (!declared(ctx.manifest, tool)) return fail('ToolNotAllowed', `${tool} is not in spec.tools`);
  if (!DEFS[tool]) return fail('ToolNotAvailable', `${tool} cannot be called from the refinement loop yet`);
  const missing = missingArgument(tool, args);
  if (missing) return missing;
  try {
    switch (tool) {
      case 'cmd.run': {
        const { command, args: argv } = splitCommand(String(args.command), args.args);
        if (!command) return fail('InvalidArguments', 'command must be a non-empty string for tool cmd.run');
        const denied = checkCommand(ctx.manifest, command, argv);
        if (denied) return { ok: false, error: denied };
        const result = await ctx.runCommand({
          command,
          args: argv,
          cwd: ctx.workdir,
          timeout_secs: ctx.ceilings.timeout_ceiling_secs,
          max_output_bytes: ctx.ceilings.max_output_bytes,
        });
        return { ok: true, value: result };
      }
      case 'fs.read': {
        const p = resolvePath(ctx, String(args.path), 'read');
        if (isToolError(p)) return { ok: false, error: p };
        return { ok: true, value: await readFile(p.host, 'utf8') };
      }
      case 'fs.write': {
        const p = resolvePath(ctx, String(args.path), 'write');
        if (isToolError(p)) return { ok: false, error: p };
        await mkdir(path.dirname(p.host), { recursive: true });
        await writeFile(p.host, String(args.content));
        return { ok: true, value: `wrote ${Buffer.byteLength(String(args.content))} bytes to ${p.sandbox}` };
      }
      case 'fs.list': {
        const p = resolvePath(ctx, typeof args.path === 'string' ? args.path : ctx.workdir, 'read');
        if (isToolError(p)) return { ok: false, error: p };
        const entries = await readdir(p.host, { withFileTypes: true });
        return { ok: true, value: entries.map((e) => (e.isDirectory() ? `${e.name}/` : e.name)).sort().join('\n') };
      }
      case 'fs.create_dir': {
        const p = resolvePath(ctx, String(args.path), 'write');
        if (isToolError(p)) return { ok: false, error: p };
        await mkdir(p.host, { recursive: true });
        return { ok: true, value: `created ${p.sandbox}` };
      }
      case 'fs.delete': {
        const p = resolvePath(ctx, String(args.path), 'write');
        if (isToolError(p)) return { ok: false, error: p };
        const st = await stat(p.host);
        if (st.isDirectory() && args.recursive !== true && (await readdir(p.host)).length > 0) {
          return fail('DirectoryNotEmpty', `${p.sandbox} is a non-empty directory; pass recursive=true`);
        }
        await rm(p.host, { recursive: true });
        return { ok: true, value: `deleted ${p.sandbox}` };
      }
      case 'fs.edit': {
        const p = resolvePath(ctx, String(args.path), 'write');
        if (isToolError(p)) return { ok: false, error: p };
        const text = await readFile(p.host, 'utf8');
        const target = String(args.target_content);
        const count = target === '' ? 0 : text.split(target).length - 1;
        if (count !== 1) return fail('EditFailed', `target_content matches ${count} places in ${p.sandbox}; it must match exactly one`);
        await writeFile(p.host, text.replace(target, () => String(args.replacement_content)));
        return { ok: true, value: `edited ${p.sandbox}: 1 replacement` };
      }
    }
    return fail('ToolNotAvailable', tool);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') return fail('NOT_FOUND', `${String(args.path)} does not exist`);
    if (e.code === 'EACCES' || e.code === 'EPERM') return fail('PERMISSION_DENIED', e.message);
    if (e.code === 'ENOSPC' || e.code === 'EDQUOT') return fail('StorageFull', 'the volume is full');
    return fail('ToolFailed', e.message ?? String(err));
  }
}
