// The execution pipeline of seed 001 (orch.execute.intent, orch.execute.status; orch.execute.wait is
// orch.workflow.wait on the same id). A pipeline is a run of the built-in workflow `orch-intent-pipeline`, so its id
// is a workflow execution id and everything the workflow engine gives (durability, leases, logs, stream, wait,
// cancel) applies to it. Steps (docs/PIPELINE.md):
//   1. discover — in the call: the tenant's code-writing agents (labels pipeline-role: code-writer and
//      language: <language>), ranked by word overlap of their name and description with the intent; the best one is
//      reused (`reused_existing_agent: true`);
//   2. generate — in the call, only when none exists: the model writes an agent manifest (ManifestGenerator: the real
//      parser plus the code-writer requirements below, deployed only when valid);
//   3. execute — the workflow's Agent state runs that agent as an execution of the agents capability, in the node's
//      isolation (container or process sandbox): it writes the code with fs.write and runs it with cmd.run;
//   4. format — the workflow completes with final_output {result} and orch.execute.status formats final_result.
import { randomUUID } from 'node:crypto';
import type { Role } from '../auth/principal.ts';
import type { AgentManifest } from '../agents/manifest/types.ts';
import type { AgentService, AgentSummary } from '../agents/service.ts';
import { Errors, OrchError, isOrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import type { WorkflowExecutionService, WorkflowExecutionView } from '../workflow/service.ts';
import type { WorkflowDefinitionService } from '../workflow/registry/service.ts';
import type { ManifestGenerator } from './generate.ts';

export const PIPELINE_WORKFLOW = 'orch-intent-pipeline';
export const PIPELINE_WORKFLOW_VERSION = '1.0.0';
export const ROLE_LABEL = 'pipeline-role';
export const ROLE_CODE_WRITER = 'code-writer';
export const LANGUAGE_LABEL = 'language';
export const PIPELINE_LANGUAGES = ['python', 'javascript', 'bash'] as const;
export type PipelineLanguage = (typeof PIPELINE_LANGUAGES)[number];
/** The node's ceiling for timeout_seconds (there are no tiers on this node: every tenant gets this limit). */
export const MAX_PIPELINE_TIMEOUT_SECONDS = 3600;
export const DEFAULT_PIPELINE_TIMEOUT_SECONDS = 600;

/** The runtime language of spec.runtime for each pipeline language. */
const RUNTIME_OF: Record<PipelineLanguage, { language: string; version: string; run: string; file: string }> = {
  python: { language: 'python', version: '3.12', run: 'python3', file: 'main.py' },
  javascript: { language: 'node', version: '20', run: 'node', file: 'main.js' },
  bash: { language: 'bash', version: '5', run: 'sh', file: 'main.sh' },
};

export const PIPELINE_WORKFLOW_YAML = `apiVersion: orch.dev/v1
kind: Workflow
metadata:
  name: ${PIPELINE_WORKFLOW}
  version: ${PIPELINE_WORKFLOW_VERSION}
  description: The execution pipeline of orch.execute.intent - a code-writing agent writes and runs code for an intent.
  labels: { builtin: "true" }
  output_template:
    result: "{{execute.output}}"
spec:
  initial_state: execute
  states:
    execute:
      kind: Agent
      agent: "{{input.agent}}"
      input: "{{input.task}}"
      timeout: ${MAX_PIPELINE_TIMEOUT_SECONDS}s
      transitions:
        - { condition: on_success, target: format }
    format:
      kind: System
      command: 'update_blackboard {"formatted": true}'
      transitions: []
`;

export interface IntentRequest {
  tenant: string;
  subject: string;
  roles?: readonly Role[];
  intent: unknown;
  inputs?: unknown;
  language?: unknown;
  volume_id?: unknown;
  timeout_seconds?: unknown;
  signal?: AbortSignal;
}

export interface IntentStarted {
  pipeline_execution_id: string;
  status: 'started';
  stream_url: string;
  reused_existing_agent: boolean;
  agent: { agent_id: string; name: string };
}

const STOP = new Set(['the', 'and', 'for', 'with', 'that', 'this', 'from', 'into', 'what', 'which', 'then', 'code', 'write', 'agent', 'runs', 'run']);

function words(text: string): Set<string> {
  return new Set(text.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length >= 3 && !STOP.has(w)));
}

/** Share of the intent's words found in the agent's name and description (0..1). */
export function overlapScore(intent: string, agent: { name: string; description: string | null }): number {
  const want = words(intent);
  if (want.size === 0) return 0;
  const have = words(`${agent.name} ${agent.description ?? ''}`);
  let hit = 0;
  for (const w of want) if (have.has(w)) hit++;
  return hit / want.size;
}

/** What the pipeline demands of a generated code-writing agent, beyond the manifest parser. */
export function codeWriterProblems(m: AgentManifest, language: PipelineLanguage): string[] {
  const rt = RUNTIME_OF[language];
  const out: string[] = [];
  const labels = m.metadata.labels ?? {};
  if (labels[ROLE_LABEL] !== ROLE_CODE_WRITER) out.push(`metadata.labels.${ROLE_LABEL} must be "${ROLE_CODE_WRITER}"`);
  if (labels[LANGUAGE_LABEL] !== language) out.push(`metadata.labels.${LANGUAGE_LABEL} must be "${language}"`);
  if (m.spec.runtime.language !== rt.language) out.push(`spec.runtime.language must be ${rt.language}`);
  const tools = new Set(m.spec.tools.map((t) => t.name));
  for (const t of ['fs.write', 'cmd.run']) if (!tools.has(t)) out.push(`spec.tools must include ${t}`);
  return out;
}

function requirements(language: PipelineLanguage): string {
  const rt = RUNTIME_OF[language];
  return [
    `- The agent writes ${language} code for the task it is given, saves it with fs.write as /workspace/${rt.file}, runs it with cmd.run (command ${rt.run}, args [/workspace/${rt.file}]) and answers with the program's output.`,
    `- metadata.labels must contain ${ROLE_LABEL}: ${ROLE_CODE_WRITER} and ${LANGUAGE_LABEL}: ${language}.`,
    `- spec.runtime: { language: ${rt.language}, version: "${rt.version}", model: default }.`,
    '- spec.tools must include fs.write and cmd.run.',
    '- metadata.description says what kind of tasks it handles.',
  ].join('\n');
}

export interface IntentPipelineDeps {
  agents: AgentService;
  workflows: WorkflowDefinitionService;
  runs: () => WorkflowExecutionService | undefined;
  generator: ManifestGenerator;
  logger: Logger;
}

export interface PipelineStatus {
  pipeline_execution_id: string;
  status: string;
  current_state?: string | null;
  final_result?: unknown;
  duration_ms?: number;
  reused_existing_agent?: boolean;
  reason?: string | null;
  failed_at_state?: string | null;
}

export class IntentPipeline {
  private readonly log: Logger;
  private ensured: Promise<string> | undefined;

  constructor(private readonly d: IntentPipelineDeps) {
    this.log = d.logger.child({ component: 'intent-pipeline' });
  }

  private runs(): WorkflowExecutionService {
    const r = this.d.runs();
    if (!r) throw new OrchError(Errors.NOT_IMPLEMENTED, 'workflow runs are not available on this node (the pipeline is a workflow)');
    return r;
  }

  /**
   * Deploys the built-in pipeline workflow (global scope, once per node; an existing deployment is kept) and answers
   * its workflow_id. Runs name it by id, so a tenant's own workflow of the same name cannot stand in for it.
   */
  private ensureWorkflow(): Promise<string> {
    this.ensured ??= (async () => {
      const global = async (): Promise<string | undefined> => {
        const have = await this.d.workflows.resolve('orch-system', PIPELINE_WORKFLOW, PIPELINE_WORKFLOW_VERSION);
        return have?.scope === 'global' ? have.id : undefined;
      };
      const have = await global();
      if (have) return have;
      try {
        return (await this.d.workflows.deploy({ tenant: 'orch-system', subject: 'orch-system', roles: ['operator'], scope: 'global', yaml: PIPELINE_WORKFLOW_YAML })).workflow_id;
      } catch (err) {
        // Another node (or call) deployed it meanwhile.
        if (!(isOrchError(err) && err.code === Errors.CONFLICT.code)) throw err;
        const now = await global();
        if (!now) throw err;
        return now;
      }
    })().catch((err: unknown) => {
      this.ensured = undefined;
      throw err;
    });
    return this.ensured;
  }

  /** The best code-writing agent for `language` visible to the caller, or undefined. */
  async discover(tenant: string, subject: string, roles: readonly Role[] | undefined, intent: string, language: PipelineLanguage): Promise<AgentSummary | undefined> {
    const all = await this.d.agents.list(tenant, { subject, ...(roles ? { roles } : {}) });
    const fit = all.filter((a) => a.labels[ROLE_LABEL] === ROLE_CODE_WRITER && a.labels[LANGUAGE_LABEL] === language && a.status !== 'paused');
    fit.sort((a, b) => overlapScore(intent, b) - overlapScore(intent, a) || a.name.localeCompare(b.name));
    return fit[0];
  }

  async start(req: IntentRequest): Promise<IntentStarted> {
    // Validate first.
    if (typeof req.intent !== 'string' || req.intent.trim() === '') throw new OrchError(Errors.BAD_REQUEST, 'intent must be a non-empty string');
    const language = req.language === undefined || req.language === null ? 'python' : req.language;
    if (typeof language !== 'string' || !(PIPELINE_LANGUAGES as readonly string[]).includes(language)) {
      throw new OrchError(Errors.BAD_REQUEST, `language must be one of ${PIPELINE_LANGUAGES.join(', ')}`);
    }
    const lang = language as PipelineLanguage;
    const inputs = req.inputs ?? {};
    if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) throw new OrchError(Errors.BAD_REQUEST, 'inputs must be an object');
    let timeout = DEFAULT_PIPELINE_TIMEOUT_SECONDS;
    if (req.timeout_seconds !== undefined && req.timeout_seconds !== null) {
      if (typeof req.timeout_seconds !== 'number' || !Number.isInteger(req.timeout_seconds) || req.timeout_seconds < 1) {
        throw new OrchError(Errors.BAD_REQUEST, 'timeout_seconds must be a positive integer');
      }
      timeout = Math.min(req.timeout_seconds, MAX_PIPELINE_TIMEOUT_SECONDS);
    }
    if (req.volume_id !== undefined && req.volume_id !== null) {
      // Seed 001: a persistent volume is a Pro-tier feature; this node keeps no tiers, so it offers none.
      throw new OrchError(Errors.NOT_IMPLEMENTED, 'volume_id: persistent pipeline volumes need a subscription tier, which this node does not track');
    }
    const runs = this.runs();
    const workflowId = await this.ensureWorkflow();

    const intent = req.intent.trim();
    let agent = await this.discover(req.tenant, req.subject, req.roles, intent, lang);
    const reused = agent !== undefined;
    if (!agent) {
      const made = await this.d.generator.agent(
        {
          tenant: req.tenant,
          subject: req.subject,
          ...(req.roles ? { roles: req.roles } : {}),
          input: `Write a code-writing agent for ${lang} tasks like this one: ${intent}`,
          requirements: requirements(lang),
          ...(req.signal ? { signal: req.signal } : {}),
        },
        (m) => codeWriterProblems(m, lang),
      );
      agent = await this.d.agents.lookup(req.tenant, made.name, { subject: req.subject, ...(req.roles ? { roles: req.roles } : {}) });
    }
    const inputText = Object.keys(inputs).length > 0 ? `\n\nInputs (JSON): ${JSON.stringify(inputs)}` : '';
    const task = `${intent}${inputText}`;
    const id = randomUUID();
    await runs.run({
      tenant: req.tenant,
      workflow: workflowId,
      executionId: id,
      userId: req.subject,
      intent,
      input: { agent: agent.name, agent_id: agent.agent_id, task, language: lang, inputs, timeout_seconds: timeout, reused_existing_agent: reused },
    });
    this.armTimeout(req.tenant, id, timeout);
    this.log.info({ tenant: req.tenant, pipeline: id, agent: agent.name, reused }, 'intent pipeline started');
    return {
      pipeline_execution_id: id,
      status: 'started',
      stream_url: `/v1/workflows/executions/${id}/stream`,
      reused_existing_agent: reused,
      agent: { agent_id: agent.agent_id, name: agent.name },
    };
  }

  /**
   * timeout_seconds: the pipeline is cancelled when it elapses. The timer lives in this process (not re-armed after a
   * restart); the pipeline's execute state has its own ceiling of MAX_PIPELINE_TIMEOUT_SECONDS in any case.
   */
  private armTimeout(tenant: string, id: string, seconds: number): void {
    const t = setTimeout(() => {
      const runs = this.d.runs();
      if (!runs) return;
      runs
        .cancel(tenant, id)
        .then((r) => {
          if (r.cancelled) this.log.info({ tenant, pipeline: id, timeout_seconds: seconds }, 'intent pipeline timed out; cancelled');
        })
        .catch((err: unknown) => this.log.warn({ err, pipeline: id }, 'cancelling a timed-out pipeline failed'));
    }, seconds * 1000);
    t.unref();
  }

  async status(tenant: string, id: unknown): Promise<PipelineStatus> {
    if (typeof id !== 'string' || id === '') throw new OrchError(Errors.BAD_REQUEST, 'pipeline_execution_id must be a string');
    const v = await this.runs().get(tenant, id);
    if (v.workflow_id !== (await this.ensureWorkflow())) throw new OrchError(Errors.NOT_FOUND, `pipeline execution ${id} not found`);
    return pipelineStatus(v);
  }
}

export function pipelineStatus(v: WorkflowExecutionView): PipelineStatus {
  const input = (v.input ?? {}) as { reused_existing_agent?: boolean; agent?: string; agent_id?: string; language?: string };
  const base = { pipeline_execution_id: v.execution_id, status: v.status };
  if (v.status === 'completed') {
    const exec = (v.blackboard.execute ?? {}) as { output?: unknown; execution_id?: string; iterations?: number; score?: number };
    const started = Date.parse(v.started_at);
    const ended = Date.parse(v.completed_at ?? v.last_transition_at ?? v.started_at);
    return {
      ...base,
      final_result: {
        output: typeof exec.output === 'string' ? exec.output : String(exec.output ?? ''),
        agent: { agent_id: input.agent_id ?? null, name: input.agent ?? null },
        language: input.language ?? null,
        execution_id: exec.execution_id ?? null,
        iterations: exec.iterations ?? null,
      },
      duration_ms: Math.max(0, ended - started),
      reused_existing_agent: input.reused_existing_agent === true,
    };
  }
  if (v.status === 'failed' || v.status === 'cancelled') {
    return { ...base, reason: v.error ?? v.status, failed_at_state: v.current_state };
  }
  return { ...base, current_state: v.current_state };
}
