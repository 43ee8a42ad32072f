// Management tools (orch.*) of seed 001 over the capability services that exist today: the agent registry
// (AgentService), executions (ExecutionService), the manifest schema and runtimes, the catalog itself and the node.
// A tool whose service is absent on this node answers `NotAvailable`; tools whose capability is not built yet are
// not registered at all (see catalog.ts).
import path from 'node:path';
import { readFile, realpath } from 'node:fs/promises';
import { volumeRoot } from '../../agents/execution/sandbox.ts';
import { readFileSync } from 'node:fs';
import { stringify as toYaml } from 'yaml';
import type { ExecutionService, ExecutionView } from '../../agents/execution/service.ts';
import { parseAgentManifest } from '../../agents/manifest/parse.ts';
import { CUSTOM_LANGUAGE, RUNTIMES } from '../../agents/manifest/runtimes.ts';
import { AGENT_MANIFEST_SCHEMA_KEY, agentManifestSchema } from '../../agents/manifest/schema.ts';
import type { AgentService, Viewer } from '../../agents/service.ts';
import type { NodeConfig } from '../../config/types.ts';
import { DEFAULT_RUNTIME_IMAGE } from '../../agents/runtime/select.ts';
import type { ToolCallContext, ToolCatalog, ToolDefinition, ToolOutcome } from '../types.ts';
import { bool, fail, int, ok, schema, str } from './util.ts';
import { parseWorkflowManifest } from '../../workflow/manifest/parse.ts';
import { WORKFLOW_MANIFEST_SCHEMA_KEY, workflowManifestSchema } from '../../workflow/manifest/schema.ts';

export { WORKFLOW_MANIFEST_SCHEMA_KEY };

export interface OrchToolDeps {
  config: NodeConfig | undefined;
  agents?: AgentService;
  executions: () => ExecutionService | undefined;
  catalog: () => ToolCatalog;
  version?: string | undefined;
  startedAt: number;
  configPath?: string | undefined;
}

let packageVersion: string | undefined;
export function orchVersion(): string {
  if (packageVersion === undefined) {
    try {
      packageVersion = String((JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? 'unknown');
    } catch {
      packageVersion = 'unknown';
    }
  }
  return packageVersion;
}

const SECRET_KEY = /(api_?key|secret|password|passwd|token|private_key|credential)/i;
export const REDACTED = '[REDACTED]';

/** The node config with secrets replaced: keys like api_key/…secret…/password/token, env and header values, URL passwords. */
export function redactConfig(value: unknown, key = ''): unknown {
  if (typeof value === 'string') {
    if (SECRET_KEY.test(key)) return REDACTED;
    if (/^[a-z][a-z0-9+.-]*:\/\/[^/\s]*@/i.test(value)) {
      try {
        const u = new URL(value);
        if (u.password) {
          u.password = REDACTED;
          return u.toString();
        }
      } catch {
        return value.replace(/(\/\/[^:/\s]+):[^@/\s]*@/, `$1:${REDACTED}@`);
      }
    }
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => redactConfig(v, key));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if ((key === 'env' || key === 'headers') && typeof v === 'string') out[k] = REDACTED;
      else if (SECRET_KEY.test(k) && v !== undefined && v !== null && typeof v !== 'object') out[k] = REDACTED;
      else out[k] = redactConfig(v, k);
    }
    return out;
  }
  return value;
}

function viewer(ctx: ToolCallContext): Viewer {
  return { subject: ctx.principal.subject, roles: ctx.principal.roles };
}

function notAvailable(tool: string, what: string): ToolOutcome {
  return fail('NotAvailable', `${tool} needs the ${what}, which this node does not run`);
}

function statusOf(v: ExecutionView): Record<string, unknown> {
  return {
    execution_id: v.execution_id,
    agent_id: v.agent_id,
    status: v.status,
    iteration_count: v.iteration,
    last_output: v.final_output,
    last_error: v.status === 'completed' ? null : v.reason,
    started_at: v.started_at,
    ended_at: v.completed_at,
  };
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}

type Def = Omit<ToolDefinition, 'inputSchema'> & { inputSchema?: Record<string, unknown> };
const def = (d: Def): ToolDefinition => ({ inputSchema: schema({}), ...d });

export function orchTools(deps: OrchToolDeps): ToolDefinition[] {
  const agents = deps.agents;
  const withAgents = (tool: string, body: (a: AgentService, ctx: ToolCallContext, args: Record<string, unknown>) => Promise<ToolOutcome>): ToolDefinition['handler'] => {
    return async (ctx, args) => (agents ? body(agents, ctx, args) : notAvailable(tool, 'agent registry'));
  };
  const withExec = (tool: string, body: (e: ExecutionService, ctx: ToolCallContext, args: Record<string, unknown>) => Promise<ToolOutcome>): ToolDefinition['handler'] => {
    return async (ctx, args) => {
      const e = deps.executions();
      return e ? body(e, ctx, args) : notAvailable(tool, 'execution service');
    };
  };

  const wait = (tool: string): ToolDefinition =>
    def({
      name: tool,
      description:
        tool === 'orch.agent.wait'
          ? 'Wait for an agent execution to finish (alias of orch.task.wait).'
          : 'Wait until an execution is completed, failed or cancelled, polling its status; answers timed_out: true after timeout_seconds.',
      inputSchema: schema(
        {
          execution_id: { type: 'string' },
          poll_interval_seconds: { type: 'integer', minimum: 1, default: 10 },
          timeout_seconds: { type: 'integer', minimum: 1, default: 300 },
        },
        ['execution_id'],
      ),
      required: ['execution_id'],
      skipJudge: true,
      handler: withExec(tool, async (e, ctx, args) => {
        const poll = int(args.poll_interval_seconds, 10, 1);
        const timeout = int(args.timeout_seconds, 300, 1);
        const deadline = Date.now() + timeout * 1000;
        for (;;) {
          const v = await e.get(ctx.tenantId, str(args.execution_id));
          if (TERMINAL.has(v.status)) return ok(statusOf(v));
          const left = deadline - Date.now();
          if (left <= 0 || ctx.signal?.aborted) return ok({ ...statusOf(v), timed_out: true });
          await sleep(Math.min(poll * 1000, left), ctx.signal);
        }
      }),
    });

  return [
    // ---- agents
    def({
      name: 'orch.agent.list',
      description: 'List the agents visible to the caller: id, name, version, status, labels.',
      required: [],
      skipJudge: true,
      handler: withAgents('orch.agent.list', async (a, ctx) => {
        const list = await a.list(ctx.tenantId, viewer(ctx));
        return ok({
          tool: 'orch.agent.list',
          agents: list.map((s) => ({ id: s.agent_id, name: s.name, version: s.version, status: s.status, labels: s.labels, scope: s.scope, description: s.description })),
          total: list.length,
        });
      }),
    }),
    // orch.agent.search: builtin/search.ts (the Cortex index).
    def({
      name: 'orch.agent.export',
      description: 'Export an agent (by name or id): its manifest YAML and metadata.',
      inputSchema: schema({ name: { type: 'string', description: 'agent name or UUID' } }, ['name']),
      required: ['name'],
      skipJudge: true,
      handler: withAgents('orch.agent.export', async (a, ctx, args) => {
        const d = await a.get(ctx.tenantId, str(args.name), viewer(ctx));
        const { manifest: _m, manifest_yaml, ...meta } = d;
        return ok({ manifest_yaml, ...meta });
      }),
    }),
    def({
      name: 'orch.agent.create',
      description: 'Deploy a new agent from a manifest (YAML); force overwrites an existing name and version.',
      inputSchema: schema({ manifest_yaml: { type: 'string' }, force: { type: 'boolean', default: false } }, ['manifest_yaml']),
      required: ['manifest_yaml'],
      skipJudge: true,
      handler: withAgents('orch.agent.create', async (a, ctx, args) => {
        const r = await a.deploy({ tenant: ctx.tenantId, subject: ctx.principal.subject, roles: ctx.principal.roles, yaml: str(args.manifest_yaml), force: bool(args.force, false) });
        return ok({ agent_id: r.agent_id, name: r.name, version: r.version, deployed: true, replaced: r.replaced });
      }),
    }),
    def({
      name: 'orch.agent.update',
      description: "Deploy a new version of an existing agent (the manifest's metadata.name names it); force overwrites the same version.",
      inputSchema: schema({ manifest_yaml: { type: 'string' }, force: { type: 'boolean', default: false } }, ['manifest_yaml']),
      required: ['manifest_yaml'],
      skipJudge: true,
      handler: withAgents('orch.agent.update', async (a, ctx, args) => {
        const yaml = str(args.manifest_yaml);
        const parsed = parseAgentManifest(yaml);
        if (!parsed.ok) return fail('InvalidManifest', `invalid agent manifest: ${parsed.errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`);
        const r = await a.update(ctx.tenantId, parsed.manifest.metadata.name, yaml, { subject: ctx.principal.subject, roles: ctx.principal.roles, force: bool(args.force, false) });
        return ok({ agent_id: r.agent_id, version: r.version, updated: true, message: `agent ${r.name} is now at version ${r.version}` });
      }),
    }),
    def({
      name: 'orch.agent.delete',
      description: 'Delete an agent and all its versions (permanent).',
      inputSchema: schema({ agent_id: { type: 'string', description: 'agent UUID or name' } }, ['agent_id']),
      required: ['agent_id'],
      skipJudge: true,
      handler: withAgents('orch.agent.delete', async (a, ctx, args) => {
        const r = await a.remove(ctx.tenantId, str(args.agent_id), viewer(ctx));
        return ok({ agent_id: r.agent_id, deleted: true });
      }),
    }),
    def({
      name: 'orch.agent.logs',
      description: "An agent's execution history, newest first: one event per execution (execution_<status>).",
      inputSchema: schema({ agent_id: { type: 'string' }, limit: { type: 'integer', default: 50 }, offset: { type: 'integer', default: 0 } }, ['agent_id']),
      required: ['agent_id'],
      skipJudge: true,
      handler: async (ctx, args) => {
        const e = deps.executions();
        if (!e || !agents) return notAvailable('orch.agent.logs', 'agent registry and execution service');
        const agent = await agents.get(ctx.tenantId, str(args.agent_id), viewer(ctx));
        const limit = int(args.limit, 50, 1, 200);
        const offset = int(args.offset, 0, 0);
        const list = await e.list(ctx.tenantId, { agentId: agent.agent_id, limit, offset });
        const events = list.map((v) => ({
          event_type: `execution_${v.status}`,
          payload: { execution_id: v.execution_id, agent_version: v.agent_version, status: v.status, iterations: v.iteration, reason: v.reason },
          recorded_at: v.completed_at ?? v.started_at ?? v.created_at,
        }));
        return ok({ tool: 'orch.agent.logs', agent_id: agent.agent_id, events, total: events.length, limit, offset });
      },
    }),
    wait('orch.agent.wait'),
    // ---- tasks (executions)
    def({
      name: 'orch.task.execute',
      description: 'Start an execution of an agent (by id or name) with an intent/input; answers the execution_id.',
      inputSchema: schema({ agent_id: { type: 'string' }, intent: { type: 'string' }, input: { type: 'object' }, version: { type: 'string' } }, ['agent_id']),
      required: ['agent_id'],
      skipJudge: false,
      handler: withExec('orch.task.execute', async (e, ctx, args) => {
        if (args.version !== undefined && args.version !== null) return fail('NotAvailable', 'orch.task.execute: running a version other than the current one is not supported yet');
        let agentId = str(args.agent_id);
        if (agents && !/^[0-9a-f-]{36}$/i.test(agentId)) agentId = (await agents.get(ctx.tenantId, agentId, viewer(ctx))).agent_id;
        const input = args.input && typeof args.input === 'object' && Object.keys(args.input).length > 0 ? JSON.stringify(args.input) : '';
        const intent = str(args.intent);
        const r = await e.start({ tenant: ctx.tenantId, agentId, input: [intent, input].filter(Boolean).join('\n\n') });
        return ok({ execution_id: r.execution_id, status: 'started' });
      }),
    }),
    def({
      name: 'orch.task.status',
      description: 'Status of an execution: status, iteration_count, last_output, last_error, started_at, ended_at.',
      inputSchema: schema({ execution_id: { type: 'string' } }, ['execution_id']),
      required: ['execution_id'],
      skipJudge: true,
      handler: withExec('orch.task.status', async (e, ctx, args) => ok(statusOf(await e.get(ctx.tenantId, str(args.execution_id))))),
    }),
    wait('orch.task.wait'),
    def({
      name: 'orch.task.list',
      description: 'List executions (optionally of one agent): id, agent_id, status, started_at.',
      inputSchema: schema({ agent_id: { type: 'string' }, limit: { type: 'integer', default: 20 } }),
      required: [],
      skipJudge: true,
      handler: withExec('orch.task.list', async (e, ctx, args) => {
        const limit = int(args.limit, 20, 1, 200);
        const list = await e.list(ctx.tenantId, { ...(typeof args.agent_id === 'string' && args.agent_id ? { agentId: args.agent_id } : {}), limit });
        return ok({ tool: 'orch.task.list', executions: list.map((v) => ({ id: v.execution_id, agent_id: v.agent_id, status: v.status, started_at: v.started_at })), total: list.length });
      }),
    }),
    def({
      name: 'orch.task.logs',
      description: 'Log events of an execution (sequence, event_type, payload, recorded_at).',
      inputSchema: schema({ execution_id: { type: 'string' }, limit: { type: 'integer', default: 50 }, offset: { type: 'integer', default: 0 } }, ['execution_id']),
      required: ['execution_id'],
      skipJudge: true,
      handler: withExec('orch.task.logs', async (e, ctx, args) => {
        const id = str(args.execution_id);
        const v = await e.get(ctx.tenantId, id);
        const r = await e.logs(ctx.tenantId, id, int(args.limit, 50, 1, 200), int(args.offset, 0, 0));
        return ok({ tool: 'orch.task.logs', execution_id: id, status: v.status, events: r.events, total: r.count, limit: r.limit, offset: r.offset });
      }),
    }),
    def({
      name: 'orch.task.cancel',
      description: 'Cancel a running execution (graceful).',
      inputSchema: schema({ execution_id: { type: 'string' } }, ['execution_id']),
      required: ['execution_id'],
      skipJudge: false,
      handler: withExec('orch.task.cancel', async (e, ctx, args) => {
        const id = str(args.execution_id);
        const r = await e.cancel(ctx.tenantId, id);
        return ok({ execution_id: id, cancelled: r.cancelled, ...(r.error ? { error: r.error } : {}) });
      }),
    }),
    def({
      name: 'orch.task.remove',
      description: 'Remove a finished execution and its history.',
      inputSchema: schema({ execution_id: { type: 'string' } }, ['execution_id']),
      required: ['execution_id'],
      skipJudge: false,
      handler: withExec('orch.task.remove', async (e, ctx, args) => {
        const id = str(args.execution_id);
        try {
          await e.remove(ctx.tenantId, id);
        } catch (err) {
          return ok({ execution_id: id, removed: false, error: (err as Error).message });
        }
        return ok({ execution_id: id, removed: true });
      }),
    }),
    def({
      name: 'orch.execution.file',
      description: "Read a file from an execution's workspace volume (its output files), by path relative to /workspace.",
      inputSchema: schema({ execution_id: { type: 'string' }, path: { type: 'string' } }, ['execution_id', 'path']),
      required: ['execution_id', 'path'],
      skipJudge: true,
      handler: withExec('orch.execution.file', async (e, ctx, args) => {
        const id = str(args.execution_id);
        await e.get(ctx.tenantId, id); // tenant scope: NOT_FOUND for another tenant's execution
        if (!deps.config?.dataDir) return notAvailable('orch.execution.file', 'node data directory');
        const root = path.join(volumeRoot(deps.config.dataDir, id), 'workspace');
        const rel = path.posix.normalize(str(args.path).replace(/^\/workspace\/?/, '')).replace(/^\/+/, '');
        if (rel === '..' || rel.startsWith('../')) return fail('PathOutsideBoundary', `${str(args.path)} is outside the execution's workspace`);
        const target = path.join(root, ...rel.split('/').filter(Boolean));
        // Symlinks must not lead out of the workspace.
        const [realRoot, realTarget] = await Promise.all([realpath(root), realpath(target)]);
        if (realTarget !== realRoot && !realTarget.startsWith(`${realRoot}${path.sep}`)) {
          return fail('PathOutsideBoundary', `${str(args.path)} resolves outside the execution's workspace`);
        }
        return ok({ execution_id: id, path: `/workspace/${rel}`, content: await readFile(realTarget, 'utf8') });
      }),
    }),
    // ---- schema
    def({
      name: 'orch.schema.get',
      description: `The JSON Schema of a manifest kind: ${AGENT_MANIFEST_SCHEMA_KEY} or ${WORKFLOW_MANIFEST_SCHEMA_KEY}.`,
      inputSchema: schema({ key: { type: 'string', enum: [AGENT_MANIFEST_SCHEMA_KEY, WORKFLOW_MANIFEST_SCHEMA_KEY] } }, ['key']),
      required: ['key'],
      skipJudge: true,
      handler: async (_ctx, args) => {
        const key = str(args.key);
        if (key === AGENT_MANIFEST_SCHEMA_KEY) return ok(agentManifestSchema);
        if (key === WORKFLOW_MANIFEST_SCHEMA_KEY) return ok(workflowManifestSchema);
        return fail('NOT_FOUND', `unknown schema key ${key}; known keys: ${AGENT_MANIFEST_SCHEMA_KEY}, ${WORKFLOW_MANIFEST_SCHEMA_KEY}`);
      },
    }),
    def({
      name: 'orch.schema.validate',
      description: 'Validate a manifest (kind agent or workflow) without deploying it; answers valid and errors.',
      inputSchema: schema({ kind: { type: 'string', enum: ['agent', 'workflow'] }, manifest_yaml: { type: 'string' } }, ['kind', 'manifest_yaml']),
      required: ['kind', 'manifest_yaml'],
      skipJudge: true,
      handler: async (_ctx, args) => {
        const kind = str(args.kind).toLowerCase();
        if (kind === 'workflow') {
          const w = parseWorkflowManifest(str(args.manifest_yaml));
          return ok(w.ok ? { valid: true } : { valid: false, errors: w.errors });
        }
        if (kind !== 'agent') return fail('InvalidArguments', `kind of tool orch.schema.validate must be agent or workflow (got ${kind})`);
        const r = parseAgentManifest(str(args.manifest_yaml));
        return ok(r.ok ? { valid: true } : { valid: false, errors: r.errors });
      },
    }),
    // ---- tools, system, runtime
    def({
      name: 'orch.tools.list',
      description: 'The tools the caller may use: name, description, source, skip_judge.',
      required: [],
      skipJudge: true,
      handler: async (ctx) => {
        const tools = deps.catalog().list(ctx.context);
        return ok({ tool: 'orch.tools.list', tools, total: tools.length });
      },
    }),
    def({
      name: 'orch.tools.search',
      description: 'Search the tools the caller may use by words in their names and descriptions.',
      inputSchema: schema({ query: { type: 'string' } }),
      required: [],
      skipJudge: true,
      handler: async (ctx, args) => {
        const query = str(args.query).trim();
        const words = query.toLowerCase().split(/\s+/).filter(Boolean);
        const all = deps.catalog().list(ctx.context);
        const tools = words.length === 0 ? all : all.filter((t) => {
          const hay = `${t.name} ${t.description}`.toLowerCase();
          return hay.includes(query.toLowerCase()) || words.every((w) => hay.includes(w));
        });
        return ok({ tool: 'orch.tools.search', query, tools, total: tools.length });
      },
    }),
    def({
      name: 'orch.system.info',
      description: "The node: version, status, node id, role, uptime and the tools enabled for the caller.",
      required: [],
      skipJudge: true,
      handler: async (ctx) =>
        ok({
          version: deps.version ?? orchVersion(),
          status: 'healthy',
          node_id: deps.config?.node?.id ?? null,
          role: deps.config?.node?.role ?? null,
          uptime_seconds: Math.round((Date.now() - deps.startedAt) / 1000),
          capabilities: deps.catalog().list(ctx.context).map((t) => t.name),
        }),
    }),
    def({
      name: 'orch.system.config',
      description: 'The active node configuration as YAML, with secrets redacted.',
      required: [],
      skipJudge: true,
      handler: async () => {
        if (!deps.config) return fail('NotAvailable', 'orch.system.config: this catalog was built without the node configuration');
        return ok({ config_path: deps.configPath ?? null, content_yaml: toYaml(redactConfig(deps.config)) });
      },
    }),
    def({
      name: 'orch.runtime.list',
      description: 'Supported runtime language/version pairs (optionally of one language) and whether a custom image is accepted.',
      inputSchema: schema({ language: { type: 'string' } }),
      required: [],
      skipJudge: true,
      handler: async (_ctx, args) => {
        const language = str(args.language).trim().toLowerCase();
        const runtimes = RUNTIMES.filter((r) => !language || r.language === language).map((r) => ({ ...r, image: DEFAULT_RUNTIME_IMAGE }));
        return ok({ tool: 'orch.runtime.list', runtimes, custom_runtime_supported: true, custom_language: CUSTOM_LANGUAGE });
      },
    }),
  ];
}
