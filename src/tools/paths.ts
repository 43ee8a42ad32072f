// Sandbox paths of the fs.* tools mapped onto the host: the mount that holds the path (`..` normalised away first),
// the context's filesystem allowlist, read-only mounts for writes (PERMISSION_DENIED), then the symbolic-link
// check of the volumes (src/volumes/containment.ts). Apart from src/tools/builtin/fs.ts so that the execution loop
// can map paths without importing the tool implementations (issue 19).
import path from 'node:path';
import { escapesThroughLink } from '../volumes/containment.ts';
import { checkPath } from './policy.ts';
import type { ToolCallContext, ToolError, VolumeMount } from './types.ts';

export interface ResolvedPath {
  host: string;
  sandbox: string;
  mount: VolumeMount;
}

export function isToolError(x: unknown): x is ToolError {
  return typeof x === 'object' && x !== null && 'error' in x && 'message' in x && !('host' in x);
}

export function workdirOf(ctx: Pick<ToolCallContext, 'workdir' | 'mounts'>): string {
  return ctx.workdir ?? ctx.mounts?.[0]?.sandboxPath ?? '/workspace';
}

/** The lexical part of the mapping: mount table, allowlist, read-only. No filesystem access. */
export function mapPath(ctx: Pick<ToolCallContext, 'workdir' | 'mounts' | 'context'>, requested: string, mode: 'read' | 'write'): ResolvedPath | ToolError {
  const workdir = workdirOf(ctx);
  const sandbox = path.posix.normalize(path.posix.isAbsolute(requested) ? requested : path.posix.join(workdir, requested)).replace(/(.)\/+$/, '$1');
  const mount = (ctx.mounts ?? [])
    .filter((m) => sandbox === m.sandboxPath || sandbox.startsWith(`${m.sandboxPath.replace(/\/+$/, '')}/`))
    .sort((a, b) => b.sandboxPath.length - a.sandboxPath.length)[0];
  if (!mount) {
    return { error: 'PathOutsideBoundary', message: ctx.mounts?.length ? `${requested} is outside the agent's volumes` : `${requested}: the caller has no volume mounted` };
  }
  const denied = checkPath(ctx.context, sandbox, mode);
  if (denied) return { error: denied.error, message: denied.message.replace(sandbox, requested) };
  if (mode === 'write' && mount.readOnly) return { error: 'PERMISSION_DENIED', message: `${mount.sandboxPath} is mounted read-only` };
  const rel = path.posix.relative(mount.sandboxPath, sandbox);
  return { host: path.join(mount.hostPath, ...rel.split('/').filter(Boolean)), sandbox, mount };
}

/** mapPath plus the symlink check: real paths of the target and of its nearest existing parent stay in the mount. */
export async function resolveVolumePath(ctx: Pick<ToolCallContext, 'workdir' | 'mounts' | 'context'>, requested: string, mode: 'read' | 'write'): Promise<ResolvedPath | ToolError> {
  const mapped = mapPath(ctx, requested, mode);
  if (isToolError(mapped)) return mapped;
  if (await escapesThroughLink(mapped.mount.hostPath, mapped.host)) {
    return { error: 'PathOutsideBoundary', message: `${requested} resolves (through a symbolic link) outside the volume ${mapped.mount.sandboxPath}` };
  }
  return mapped;
}
