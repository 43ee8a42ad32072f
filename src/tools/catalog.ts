// The node's tool catalog (seed 001): one set of built-in tool definitions behind every caller — the refinement
// loop (origin inner_loop), SEAL invocations from agent containers and MCP clients. call() runs, in order:
//   1. unknown tool                         → ToolNotFound
//   2. missing or null required argument    → InvalidArguments ("missing required argument "<field>" for tool <name>");
//      an argument of the wrong kind for its declared type (arg-types.ts) → InvalidArguments
//   3. the caller's SecurityContext          → ToolNotAllowed; the handlers check paths, domains and commands
//                                              (PathOutsideBoundary, DomainNotAllowed, CommandNotAllowed, …)
//   4. the handler; an exception of the operating system becomes NOT_FOUND, PERMISSION_DENIED or StorageFull,
//      anything else ToolFailed. call() never throws for a tool-level failure.
// skip_judge: the seed default of each tool, overridden per tool by the node config
// (spec.builtin_dispatchers[].capabilities[].skip_judge). Agents cannot influence it.
//
// The pipeline tools (orch.execute, orch.execute.intent, orch.execute.status; builtin/pipeline.ts) and the
// generators (orch.agent.generate, orch.workflow.generate) are always registered and answer NotAvailable on a node
// without the agent registry, workflow runs and an LLM provider; orch.execute.wait is in builtin/workflow-runs.ts.
// orch.git.* (clone, list, status, diff, refresh, delete, push, commit) is registered when the catalog is given a
// database and the VolumeService (a binding owns a volume; src/git/service.ts). orch.script.* (save, list, get, update,
// delete) is registered when the catalog is given a database; orch.volume.* (create, list, delete, quota) and
// orch.file.* (list, read, write, delete, mkdir) when it is given the VolumeService. orch.agent.search and
// orch.workflow.search are always registered (builtin/search.ts); without the Cortex index (`cortexSearch`) they
// answer `Cortex not configured`. The registry tools
// orch.workflow.{create, update, export, delete, list, validate, promote, demote} are always registered
// (builtin/workflow-defs.ts); without the WorkflowDefinitionService they answer NotAvailable.
import type { AgentService } from '../agents/service.ts';
import type { ExecutionService } from '../agents/execution/service.ts';
import type { NodeConfig } from '../config/types.ts';
import { Errors, isOrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import { argumentTypeError } from './arg-types.ts';
import { cmdCeilingsOf, cmdTools } from './builtin/cmd.ts';
import { fsTools } from './builtin/fs.ts';
import { orchTools } from './builtin/orch.ts';
import { scriptTools } from './builtin/scripts.ts';
import { volumeTools } from './builtin/volumes.ts';
import { gitTools } from './builtin/git.ts';
import { GitService, gitSettingsOf } from '../git/service.ts';
import type { VolumeService } from '../volumes/service.ts';
import type { EventBus } from '../bus/bus.ts';
import { webTools } from './builtin/web.ts';
import { workflowRunTools } from './builtin/workflow-runs.ts';
import type { WorkflowExecutionService } from '../workflow/service.ts';
import { workflowDefinitionTools } from './builtin/workflow-defs.ts';
import { pipelineTools } from './builtin/pipeline.ts';
import type { IntentPipeline } from '../pipeline/intent.ts';
import type { ManifestGenerator } from '../pipeline/generate.ts';
import type { WorkflowDefinitionService } from '../workflow/registry/service.ts';
import { isToolAllowed } from './policy.ts';
import { searchTools } from './builtin/search.ts';
import type { CortexSearchIndex } from '../cortex/search.ts';
import { inToolCallSpan } from '../observability/runs.ts';
import type { SecurityContext, ToolCallContext, ToolCatalog, ToolDefinition, ToolInfo, ToolOutcome } from './types.ts';

export interface ToolCatalogDeps {
  config: NodeConfig;
  logger: Logger;
  agents?: AgentService;
  /** The node's database: orch.script.* is registered only when it is given. */
  db?: Db;
  /** The node's volumes: orch.volume.* and orch.file.* are registered only when it is given. */
  volumes?: VolumeService;
  /** The node's event bus: StorageEvents of fs.* calls on volume-backed mounts are published on it. */
  bus?: EventBus;
  /** orch.git.*: default, a GitService over `db` and `volumes` when both are given. */
  git?: GitService;
  /** The workflow registry behind orch.workflow.{create,update,export,delete,list,validate,promote,demote}. */
  workflows?: WorkflowDefinitionService;
  /** Late-bound: the ExecutionService is created after the catalog. */
  executions?: () => ExecutionService | undefined;
  /** Late-bound: workflow runs (orch.workflow.run, executions.list/get, logs, status, wait, cancel, signal, remove; orch.execute.wait). */
  workflowRuns?: () => WorkflowExecutionService | undefined;
  /** The Cortex index behind orch.agent.search / orch.workflow.search; absent: they answer `Cortex not configured`. */
  cortexSearch?: CortexSearchIndex;
  /** orch.system.info: the node's version (default: package.json's) and start time (default: now). */
  version?: string;
  startedAt?: number;
  /** orch.execute.intent / orch.execute.status (src/pipeline/intent.ts); absent: they answer NotAvailable. */
  pipeline?: IntentPipeline;
  /** orch.agent.generate / orch.workflow.generate (src/pipeline/generate.ts); absent: NotAvailable. */
  generator?: ManifestGenerator;
}

export interface NodeToolCatalog extends ToolCatalog {
  /** Every registered definition (skip_judge as the node config sets it), in name order. */
  definitions(): ToolDefinition[];
  /** skip_judge of a tool after the node config's override; undefined for an unknown tool. */
  skipJudge(name: string): boolean | undefined;
}

function skipJudgeOverrides(config: NodeConfig | undefined): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const d of config?.builtin_dispatchers ?? []) {
    for (const c of d.capabilities ?? []) {
      if (typeof c.skip_judge === 'boolean') out.set(c.tool, c.skip_judge);
    }
  }
  return out;
}

function isMissing(v: unknown): boolean {
  return v === undefined || v === null;
}

/** Maps an exception of a handler to the seed's error names. */
export function errorOutcome(name: string, args: Record<string, unknown>, err: unknown): ToolOutcome {
  if (isOrchError(err)) {
    const byCode: Record<string, string> = {
      [Errors.NOT_FOUND.code]: 'NOT_FOUND',
      [Errors.CONFLICT.code]: 'ALREADY_EXISTS',
      [Errors.FORBIDDEN.code]: 'PERMISSION_DENIED',
      [Errors.BAD_REQUEST.code]: 'InvalidArguments',
      [Errors.VALIDATION.code]: 'InvalidManifest',
      [Errors.NOT_IMPLEMENTED.code]: 'NotAvailable',
      [Errors.STORAGE_FULL.code]: 'StorageFull',
      [Errors.PATH_OUTSIDE_BOUNDARY.code]: 'PathOutsideBoundary',
    };
    const details = Array.isArray(err.details)
      ? `: ${(err.details as { field?: string; message?: string }[]).map((d) => (d.field ? `${d.field}: ${d.message}` : String(d.message))).join('; ')}`
      : '';
    return { ok: false, error: { error: byCode[err.code] ?? 'ToolFailed', message: `${err.message}${details}` } };
  }
  const e = err as NodeJS.ErrnoException;
  const target = typeof args.path === 'string' ? args.path : name;
  switch (e?.code) {
    case 'ENOENT':
      return { ok: false, error: { error: 'NOT_FOUND', message: `${target} does not exist` } };
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return { ok: false, error: { error: 'PERMISSION_DENIED', message: `${target}: permission denied` } };
    case 'ENOSPC':
    case 'EDQUOT':
      return { ok: false, error: { error: 'StorageFull', message: `${target}: the volume is full (storage error)` } };
    case 'EISDIR':
      return { ok: false, error: { error: 'IsADirectory', message: `${target} is a directory` } };
    case 'ENOTDIR':
      return { ok: false, error: { error: 'NotADirectory', message: `${target}: a part of the path is not a directory` } };
    case 'EEXIST':
      return { ok: false, error: { error: 'ALREADY_EXISTS', message: `${target} already exists and is not a directory` } };
  }
  return { ok: false, error: { error: 'ToolFailed', message: `${name} failed: ${e?.message ?? String(err)}` } };
}

export function createToolCatalog(deps: ToolCatalogDeps): NodeToolCatalog {
  const log = deps.logger.child({ component: 'tools' });
  const overrides = skipJudgeOverrides(deps.config);
  const defs = new Map<string, ToolDefinition>();
  const register = (list: ToolDefinition[]): void => {
    for (const d of list) {
      if (defs.has(d.name)) throw new Error(`tool ${d.name} is registered twice`);
      defs.set(d.name, { ...d, skipJudge: overrides.get(d.name) ?? d.skipJudge });
    }
  };
  register(fsTools({ ...(deps.volumes ? { volumes: deps.volumes } : {}), ...(deps.db ? { db: deps.db } : {}), ...(deps.bus ? { bus: deps.bus } : {}), logger: log }));
  register(cmdTools(cmdCeilingsOf(deps.config)));
  register(webTools(deps.config));
  register(
    orchTools({
      config: deps.config,
      ...(deps.agents ? { agents: deps.agents } : {}),
      executions: deps.executions ?? (() => undefined),
      catalog: () => catalog,
      version: deps.version,
      startedAt: deps.startedAt ?? Date.now(),
    }),
  );
  if (deps.db) register(scriptTools({ db: deps.db }));
  if (deps.workflowRuns) register(workflowRunTools({ runs: deps.workflowRuns }));
  if (deps.volumes) register(volumeTools({ volumes: deps.volumes }));
  const git = deps.git ?? (deps.db && deps.volumes ? new GitService({ db: deps.db, volumes: deps.volumes, settings: gitSettingsOf(deps.config), logger: log }) : undefined);
  if (git) register(gitTools({ git }));
  register(workflowDefinitionTools(deps.workflows ? { workflows: deps.workflows } : {}));
  register(pipelineTools({ pipeline: deps.pipeline, generator: deps.generator }));
  register(searchTools({ index: deps.cortexSearch }));
  const sorted = [...defs.values()].sort((a, b) => a.name.localeCompare(b.name));

  const catalog: NodeToolCatalog = {
    definitions: () => [...sorted],
    skipJudge: (name) => defs.get(name)?.skipJudge,
    get: (name) => defs.get(name),
    list(context: SecurityContext): ToolInfo[] {
      return sorted
        .filter((d) => isToolAllowed(context, d.name))
        .map((d) => ({ name: d.name, description: d.description, source: 'builtin' as const, skip_judge: d.skipJudge }));
    },
    async call(ctx: ToolCallContext, name: string, rawArgs: Record<string, unknown>): Promise<ToolOutcome> {
      const def = defs.get(name);
      if (!def) return { ok: false, error: { error: 'ToolNotFound', message: `tool ${name} is not available on this node` } };
      if (rawArgs !== undefined && rawArgs !== null && (typeof rawArgs !== 'object' || Array.isArray(rawArgs))) {
        return { ok: false, error: { error: 'InvalidArguments', message: `the arguments of tool ${name} must be an object` } };
      }
      const args: Record<string, unknown> = rawArgs ?? {};
      for (const field of def.required) {
        if (isMissing(args[field])) return { ok: false, error: { error: 'InvalidArguments', message: `missing required argument "${field}" for tool ${name}` } };
      }
      const wrongType = argumentTypeError(name, def.inputSchema, args);
      if (wrongType) return { ok: false, error: { error: 'InvalidArguments', message: wrongType } };
      if (!isToolAllowed(ctx.context, name)) {
        return { ok: false, error: { error: 'ToolNotAllowed', message: `${name} is not allowed in security context ${ctx.context.name}` } };
      }
      return inToolCallSpan(name, ctx.origin, async () => {
        try {
          return await def.handler(ctx, args);
        } catch (err) {
          const outcome = errorOutcome(name, args, err);
          if (!outcome.ok && outcome.error.error === 'ToolFailed') log.warn({ err, tool: name, origin: ctx.origin }, 'tool handler failed');
          return outcome;
        }
      });
    },
  };
  return catalog;
}
