// Security contexts and the policy checks of seed 001: which tools a caller may see and call (allow/deny globs,
// deny wins), which paths (filesystem allowlists), which domains (network mode and allowlist) and which commands
// (cmd.run subcommand_allowlist). Every transport resolves a SecurityContext first; the catalog checks it on every
// call. A check answers a ToolError with the seed's error name, or undefined when the call may go on.
import path from 'node:path';
import type { Principal } from '../auth/principal.ts';
import type { AgentManifest } from '../agents/manifest/types.ts';
import type { SecurityContext, ToolError } from './types.ts';

/**
 * `*` matches any run of characters (dots included): `fs.*`, `orch.agent.*`, `*`. Matched without a regular
 * expression: a pattern of many stars (`*a*a*a*a*b`) made a backtracking RegExp take time exponential in the stars
 * against a long name a caller chose; this greedy scan with one backtrack point is O(pattern × name) at worst.
 */
export function globMatch(pattern: string, name: string): boolean {
  if (!pattern.includes('*')) return pattern === name;
  let p = 0;
  let n = 0;
  let star = -1; // position in pattern after the last `*`
  let resume = 0; // where in name that `*` would give up one more character
  while (n < name.length) {
    if (p < pattern.length && pattern[p] !== '*' && pattern[p] === name[n]) {
      p++;
      n++;
    } else if (p < pattern.length && pattern[p] === '*') {
      star = ++p;
      resume = n;
    } else if (star !== -1) {
      p = star;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === '*') p++;
  return p === pattern.length;
}

/** Deny wins; an empty allow list allows every tool. */
export function isToolAllowed(ctx: SecurityContext, name: string): boolean {
  if (ctx.deny.some((p) => globMatch(p, name))) return false;
  if (ctx.allow.length === 0) return true;
  return ctx.allow.some((p) => globMatch(p, name));
}

/** spec.tools → allow (nothing when none are declared); spec.security → filesystem and network; cmd.run config. */
export function contextFromManifest(manifest: AgentManifest): SecurityContext {
  const spec = manifest.spec;
  const allowlist = spec.tools.find((t) => t.name === 'cmd.run')?.config?.subcommand_allowlist;
  const allow = spec.tools.map((t) => t.name);
  return {
    name: spec.security_context ?? `agent:${manifest.metadata.name}`,
    allow,
    // An empty allow list means "everything" in a context; an agent that declares no tools gets none.
    deny: allow.length === 0 ? ['*'] : [],
    filesystem: { read: [...spec.security.filesystem.read], write: [...spec.security.filesystem.write] },
    network: { mode: spec.security.network.mode, allowlist: [...spec.security.network.allowlist] },
    ...(allowlist ? { subcommandAllowlist: allowlist } : {}),
  };
}

/** Read-only management tools an external caller may use without further grants. */
export const EXTERNAL_READ_ONLY_TOOLS: readonly string[] = [
  'orch.agent.list',
  'orch.agent.search',
  'orch.agent.export',
  'orch.agent.logs',
  'orch.agent.wait',
  'orch.task.status',
  'orch.task.wait',
  'orch.task.list',
  'orch.task.logs',
  'orch.workflow.list',
  'orch.workflow.search',
  'orch.workflow.export',
  'orch.workflow.validate',
  'orch.workflow.executions.list',
  'orch.workflow.executions.get',
  'orch.workflow.logs',
  'orch.workflow.status',
  'orch.schema.get',
  'orch.schema.validate',
  'orch.tools.list',
  'orch.tools.search',
  'orch.system.info',
  'orch.runtime.list',
  'orch.script.list',
  'orch.script.get',
  'orch.volume.list',
  'orch.volume.quota',
  'orch.file.list',
  'orch.file.read',
];

/** Node-level contexts by name. */
export const nodeContexts: Readonly<Record<string, SecurityContext>> = {
  /** Everything the catalog has, any path on the caller's volumes, any domain, any command. */
  'orch-system-agent-runtime': {
    name: 'orch-system-agent-runtime',
    allow: [],
    deny: [],
    filesystem: { read: [], write: [] },
    network: { mode: 'allow', allowlist: [] },
  },
  /** External callers by default: read-only management tools; no fs, cmd or web. */
  'orch-external-default': {
    name: 'orch-external-default',
    allow: [...EXTERNAL_READ_ONLY_TOOLS],
    deny: ['fs.*', 'cmd.*', 'web.*'],
    filesystem: { read: [], write: [] },
    network: { mode: 'none', allowlist: [] },
  },
};

function copy(ctx: SecurityContext): SecurityContext {
  return {
    ...ctx,
    allow: [...ctx.allow],
    deny: [...ctx.deny],
    filesystem: { read: [...ctx.filesystem.read], write: [...ctx.filesystem.write] },
    network: { mode: ctx.network.mode, allowlist: [...ctx.network.allowlist] },
  };
}

/** A node context by name (a copy); undefined for an unknown name. */
export function nodeContext(name: string): SecurityContext | undefined {
  const c = nodeContexts[name];
  return c ? copy(c) : undefined;
}

/**
 * The context of a caller without an execution (MCP, HTTP): an operator gets orch-system-agent-runtime, minus fs.*
 * and cmd.* unless it has a volume to work on; everyone else orch-external-default.
 */
export function contextForPrincipal(principal: Principal, opts: { hasVolume?: boolean } = {}): SecurityContext {
  if (principal.roles.includes('operator')) {
    const ctx = copy(nodeContexts['orch-system-agent-runtime']!);
    if (!opts.hasVolume) ctx.deny.push('fs.*', 'cmd.*');
    return ctx;
  }
  return copy(nodeContexts['orch-external-default']!);
}

function underPattern(p: string, patterns: string[]): boolean {
  return patterns.some((pat) => {
    const base = pat.replace(/\/\*\*$|\/\*$/, '').replace(/\/+$/, '') || '/';
    return p === base || p.startsWith(base === '/' ? '/' : `${base}/`);
  });
}

/** The filesystem allowlist of the context (sandbox paths; empty = anywhere on the caller's volumes). */
export function checkPath(ctx: SecurityContext, sandboxPath: string, mode: 'read' | 'write'): ToolError | undefined {
  const p = path.posix.normalize(sandboxPath);
  const allow = mode === 'read' ? ctx.filesystem.read : ctx.filesystem.write;
  if (allow.length > 0 && !underPattern(p, allow)) {
    return { error: 'PathOutsideBoundary', message: `${sandboxPath} is outside the ${mode} allowlist (${allow.join(', ')})` };
  }
  return undefined;
}

function domainMatches(host: string, entry: string): boolean {
  const d = entry.trim().toLowerCase().replace(/^\*\./, '').replace(/^\./, '');
  if (!d) return false;
  if (d === '*') return true;
  return host === d || host.endsWith(`.${d}`);
}

/**
 * Network policy: mode `none` denies every domain; `allow` permits the allowlist (suffix match: `example.com` covers
 * `api.example.com`; an empty allowlist permits any); `deny` permits everything except the list.
 */
export function checkDomain(ctx: SecurityContext, url: string): ToolError | undefined {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase().replace(/^\[|\]$/g, '');
  } catch {
    return { error: 'InvalidArguments', message: `${url} is not a valid URL` };
  }
  const { mode, allowlist } = ctx.network;
  if (mode === 'none') return { error: 'DomainNotAllowed', message: `${host}: network access is disabled in security context ${ctx.name}` };
  if (mode === 'allow') {
    if (allowlist.length === 0 || allowlist.some((e) => domainMatches(host, e))) return undefined;
    return { error: 'DomainNotAllowed', message: `${host} is not in the domain allowlist (${allowlist.join(', ')})` };
  }
  if (allowlist.some((e) => domainMatches(host, e))) return { error: 'DomainNotAllowed', message: `${host} is in the domain denylist` };
  return undefined;
}

/** cmd.run policy: the tool allowed, the base command in the subcommand_allowlist, the first argument permitted. */
export function checkCommand(ctx: SecurityContext, command: string, args: string[]): ToolError | undefined {
  if (!isToolAllowed(ctx, 'cmd.run')) return { error: 'ToolNotAllowed', message: `cmd.run is not allowed in security context ${ctx.name} (not in spec.tools)` };
  const allowlist = ctx.subcommandAllowlist;
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
