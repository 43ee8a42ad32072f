// The tool catalog's shapes (seed 001). One catalog serves every caller: the refinement loop (inner loop), SEAL
// invocations from agent containers, and MCP clients. A tool is a definition plus a handler over the capability
// service objects; policy (the caller's SecurityContext) is checked before the handler runs.
import type { Principal } from '../auth/principal.ts';
import type { AgentManifest } from '../agents/manifest/types.ts';

/** A catalog entry as orch.tools.list shows it. */
export interface ToolInfo {
  name: string;
  description: string;
  source: 'builtin' | 'mcp';
  skip_judge: boolean;
}

/** A tool-level failure the caller sees as a result, with the seed's error name (`PathOutsideBoundary`, …). */
export interface ToolError {
  error: string;
  message: string;
}

export type ToolOutcome = { ok: true; result: unknown } | { ok: false; error: ToolError };

/** Where a call comes from; decides the judge and which services a tool may reach. */
export type CallOrigin = 'inner_loop' | 'seal' | 'mcp';

/** A mounted volume of the calling execution (sandbox path → host directory). */
export interface VolumeMount {
  sandboxPath: string;
  hostPath: string;
  readOnly: boolean;
  /**
   * A volume of the VolumeService (spec.volumes of an execution): fs.read/write/list/delete/create_dir/edit then
   * act through the VolumeService (quota, ENOSPC, atomic writes) and record StorageEvents, like the FSAL.
   */
  volumeId?: string;
}

/**
 * The caller's security context, resolved before any call (issue 4 "Security contexts"): named, from the agent's
 * manifest `security` section and `security_context`, or a node-level context (e.g. `orch-system-agent-runtime`).
 */
export interface SecurityContext {
  name: string;
  /** Tool names or globs (`fs.*`) allowed; empty = every tool the catalog has. */
  allow: string[];
  /** Tool names or globs denied; deny wins over allow. */
  deny: string[];
  filesystem: { read: string[]; write: string[] };
  network: { mode: 'none' | 'allow' | 'deny'; allowlist: string[] };
  /** base command → permitted first arguments (cmd.run). Absent: any command (if cmd.run is allowed). */
  subcommandAllowlist?: Record<string, string[]>;
  tier?: string;
}

/** Everything a tool handler may use about its caller. */
export interface ToolCallContext {
  origin: CallOrigin;
  principal: Principal;
  tenantId: string;
  context: SecurityContext;
  executionId?: string;
  agentId?: string;
  manifest?: AgentManifest;
  /** The execution's volumes, for fs.* (absent for callers without an execution). */
  mounts?: VolumeMount[];
  /** Relative paths start here (the sandbox path of the first mount, /workspace). */
  workdir?: string;
  /** Runs a command in the caller's sandbox (cmd.run); absent when the caller has none. */
  /** `env`: variables set for this command on top of the sandbox's (cmd.run sets PATH and git's config guards). */
  runCommand?: (req: { command: string; args: string[]; cwd: string; timeout_secs: number; max_output_bytes: number; env?: Record<string, string> }) => Promise<{
    exit_code: number;
    stdout: string;
    stderr: string;
    duration_ms: number;
    truncated: boolean;
    /** Killed for running past timeout_secs (cmd.run answers ExecTimeoutCeilingExceeded). */
    timed_out?: boolean;
  }>;
  /** Why there is no runCommand (cmd.run's tool error when set), e.g. the execution runs on another node. */
  noSandbox?: ToolError;
  signal?: AbortSignal;
  /** cmd.run ceilings for this caller (the refinement loop passes the node's); default: the catalog's node config. */
  cmdCeilings?: { max_output_bytes: number; timeout_ceiling_secs: number };
}

export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the arguments object (served to models and MCP clients). */
  inputSchema: Record<string, unknown>;
  /** Arguments that must be present and non-null (seed 001 catalog table). */
  required: string[];
  /** seed 001 default; the node config may override it per tool. */
  skipJudge: boolean;
  handler(ctx: ToolCallContext, args: Record<string, unknown>): Promise<ToolOutcome>;
}

/** The catalog every transport calls. */
export interface ToolCatalog {
  /** Tools the context allows, in name order. */
  list(context: SecurityContext): ToolInfo[];
  get(name: string): ToolDefinition | undefined;
  /**
   * Argument validation (InvalidArguments naming the field and the tool), then policy (ToolNotAllowed,
   * PathOutsideBoundary, DomainNotAllowed, CommandNotAllowed, SubcommandNotAllowed, PERMISSION_DENIED), then the
   * handler. Never throws for a tool-level failure; throws only for a bug.
   */
  call(ctx: ToolCallContext, name: string, args: Record<string, unknown>): Promise<ToolOutcome>;
}
