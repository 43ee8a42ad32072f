// The manifest's filesystem policy (spec.security.filesystem read/write globs, sandbox paths) applied to FSAL
// calls, with the same matcher the fs.* tools use (src/tools/policy.ts checkPath), so one policy judges tools, FSAL
// and FUSE. A volume path is judged at the sandbox path where the agent sees it: the mount path + the volume path.
//
// Metadata calls (Lookup, GetAttr, ReadDir) are also allowed on the directories above an allowed glob: a process
// can only reach /workspace/src/a.ts through the kernel by looking up /workspace and /workspace/src first.
import path from 'node:path';
import type { AgentManifest } from '../agents/manifest/types.ts';
import { checkPath } from '../tools/policy.ts';
import type { SecurityContext } from '../tools/types.ts';
import { fsalError } from './errors.ts';
import { sandboxPathOf } from './paths.ts';

function filesystemContext(manifest: AgentManifest): SecurityContext {
  const fs = manifest.spec?.security?.filesystem ?? { read: [], write: [] };
  return { name: 'fsal', allow: [], deny: [], filesystem: { read: [...fs.read], write: [...fs.write] }, network: { mode: 'none', allowlist: [] } };
}

/** The directory part of a glob before its first wildcard: `/workspace/src/**` → `/workspace/src`. */
function globBase(pattern: string): string {
  const parts = pattern.split('/');
  const i = parts.findIndex((p) => /[*?[]/.test(p));
  const base = (i < 0 ? parts : parts.slice(0, i)).join('/') || '/';
  return path.posix.normalize(base);
}

function isAncestorOfAllowed(p: string, patterns: string[]): boolean {
  return patterns.some((pat) => {
    const base = globBase(pat);
    return p === '/' || base === p || base.startsWith(`${p.replace(/\/+$/, '')}/`);
  });
}

/** Throws PERMISSION_DENIED when the policy forbids `mode` on volume path `rel` mounted at `mountPath`. */
export function checkFsalPolicy(manifest: AgentManifest, mountPath: string, rel: string, mode: 'read' | 'write' | 'meta'): void {
  const ctx = filesystemContext(manifest);
  const sandbox = sandboxPathOf(mountPath, rel);
  const denied = checkPath(ctx, sandbox, mode === 'write' ? 'write' : 'read');
  if (!denied) return;
  if (mode === 'meta') {
    const both = [...ctx.filesystem.read, ...ctx.filesystem.write];
    if (isAncestorOfAllowed(sandbox, both) || !checkPath(ctx, sandbox, 'write')) return;
  }
  throw fsalError('denied', `${sandbox}: ${denied.message.replace(`${sandbox} `, '')} (spec.security.filesystem)`);
}
