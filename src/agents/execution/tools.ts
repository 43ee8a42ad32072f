// The refinement loop's view of the node's tool catalog (src/tools/catalog.ts): which tools the model is offered
// (every tool of the manifest's spec.tools that the node's catalog has: fs.*, cmd.run, web.* and the orch.*
// management tools alike, as seed 001 offers them to agents), their wire names, and runTool(), which sends each
// call through ToolCatalog.call with origin `inner_loop` and the manifest's security context. There is one
// implementation of every tool and of the policy checks: the catalog's. A tool error is a result the model sees and
// can react to, not a failure of the execution. (Until issue 15 the loop offered only fs.*, cmd.run and web.*, and
// an orch.* tool in spec.tools was dropped without a word.)
//
// The catalog is handed in (LoopDeps.catalog, ToolContext.catalog), never built here: src/tools/builtin/orch.ts
// drives executions, so the loop importing the catalog made agents/execution ↔ tools one import cycle (issue 19).
import type { Principal } from '../../auth/principal.ts';
import { mapPath } from '../../tools/paths.ts';
import { checkCommand as checkCommandInContext, contextFromManifest } from '../../tools/policy.ts';
import type { ToolCatalog, ToolError } from '../../tools/types.ts';
import type { LlmToolDef } from '../llm/types.ts';
import type { AgentManifest } from '../manifest/types.ts';

export type { ToolError } from '../../tools/types.ts';
export type { CmdCeilings } from '../../tools/builtin/cmd.ts';
import type { CmdCeilings } from '../../tools/builtin/cmd.ts';

export type ToolResult = { ok: true; value: unknown } | { ok: false; error: ToolError };

export interface Mount {
  sandboxPath: string;
  hostPath: string;
  readOnly: boolean;
  /** Set for a spec.volumes volume of the VolumeService (fs.* tools then act through it). */
  volumeId?: string;
}

export interface CmdRequest {
  command: string;
  args: string[];
  cwd: string;
  timeout_secs: number;
  max_output_bytes: number;
  /** Set for this command on top of the sandbox's environment (cmd.run: the fixed PATH, git's config guards). */
  env?: Record<string, string>;
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
  /** The node's catalog (src/agents/capability.ts builds it). */
  catalog: ToolCatalog;
  tenantId?: string;
  executionId?: string;
  agentId?: string;
  signal?: AbortSignal;
}

/** Tool names as the model sees them: dots are not allowed in OpenAI function names, so `fs.write` → `fs_write`. */
export function wireName(tool: string): string {
  return tool.replace(/\./g, '_');
}

/** The definitions offered to the model: the manifest's tools that the node's catalog has. */
export function toolDefs(manifest: AgentManifest, catalog: ToolCatalog): LlmToolDef[] {
  return manifest.spec.tools
    .map((t) => catalog.get(t.name))
    .filter((d) => d !== undefined)
    .map((d) => ({ name: wireName(d.name), description: d.description, parameters: d.inputSchema }));
}

export function toolFromWire(manifest: AgentManifest, wire: string): string {
  const match = manifest.spec.tools.find((t) => wireName(t.name) === wire || t.name === wire);
  return match?.name ?? wire.replace(/_/g, '.');
}

/** Maps a sandbox path to the host (mount table, the manifest's filesystem allowlists, read-only mounts). */
export function resolvePath(ctx: ToolContext, requested: string, mode: 'read' | 'write'): { host: string; sandbox: string } | ToolError {
  const r = mapPath({ mounts: ctx.mounts, workdir: ctx.workdir, context: contextFromManifest(ctx.manifest) }, requested, mode);
  return 'host' in r ? { host: r.host, sandbox: r.sandbox } : r;
}

/** cmd.run policy of seed 001 for a manifest: declared tool, base command in the allowlist, first argument permitted. */
export function checkCommand(manifest: AgentManifest, command: string, args: string[]): ToolError | undefined {
  return checkCommandInContext(contextFromManifest(manifest), command, args);
}

function agentPrincipal(ctx: ToolContext): Principal {
  const tenant = ctx.tenantId ?? 'default';
  // The same standing as the agent's SEAL session (src/seal/service.ts): no role, its own tenant only.
  return { subject: `agent:${ctx.agentId ?? ctx.manifest.metadata.name}`, username: `agent:${ctx.manifest.metadata.name}`, roles: [], tenantId: tenant, homeTenantId: tenant, isServiceAccount: false, delegated: false };
}

export async function runTool(ctx: ToolContext, tool: string, args: Record<string, unknown>): Promise<ToolResult> {
  const catalog = ctx.catalog;
  const context = contextFromManifest(ctx.manifest);
  if (!ctx.manifest.spec.tools.some((t) => t.name === tool)) return { ok: false, error: { error: 'ToolNotAllowed', message: `${tool} is not in spec.tools` } };
  const principal = agentPrincipal(ctx);
  const outcome = await catalog.call(
    {
      origin: 'inner_loop',
      principal,
      tenantId: principal.tenantId,
      context,
      manifest: ctx.manifest,
      mounts: ctx.mounts,
      workdir: ctx.workdir,
      cmdCeilings: ctx.ceilings,
      runCommand: (req) => ctx.runCommand(req),
      ...(ctx.executionId ? { executionId: ctx.executionId } : {}),
      ...(ctx.agentId ? { agentId: ctx.agentId } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    },
    tool,
    args ?? {},
  );
  return outcome.ok ? { ok: true, value: outcome.result } : { ok: false, error: outcome.error };
}
