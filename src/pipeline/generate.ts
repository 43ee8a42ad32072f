// Manifest generation (seed 001 orch.agent.generate, orch.workflow.generate, and the agent step of
// orch.execute.intent): the model is asked for a manifest in YAML; its answer is checked by the real parser of the
// kind (parseAgentManifest / parseWorkflowManifest) plus the caller's own checks, and deployed through the registry
// (AgentService / WorkflowDefinitionService) only when it is valid. A refused answer goes back to the model with the
// parser's errors (and a deploy conflict's message) for another attempt, up to `attempts`; nothing is deployed when
// none is valid. One model call per attempt, with no tools: the conversation lives here, not in a sandbox.
import type { Role } from '../auth/principal.ts';
import type { LlmMessage, LlmRegistry } from '../agents/llm/types.ts';
import { parseAgentManifest } from '../agents/manifest/parse.ts';
import type { AgentManifest } from '../agents/manifest/types.ts';
import type { AgentService } from '../agents/service.ts';
import { Errors, OrchError, isOrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import { parseWorkflowManifest } from '../workflow/manifest/parse.ts';
import type { WorkflowManifest } from '../workflow/manifest/types.ts';
import type { WorkflowDefinitionService } from '../workflow/registry/service.ts';
import { deadline } from '../util/deadline.ts';

export const DEFAULT_GENERATION_ATTEMPTS = 3;
export const DEFAULT_GENERATION_TIMEOUT_MS = 120_000;

export interface GenerateRequest {
  tenant: string;
  subject: string;
  roles?: readonly Role[];
  /** What the manifest is for, in natural language. */
  input: string;
  /** The model alias (default `default`). */
  model?: string;
  /** Extra instructions appended to the system prompt (the pipeline's code-writer requirements). */
  requirements?: string;
  signal?: AbortSignal;
}

export interface GeneratedAgent {
  agent_id: string;
  name: string;
  version: string;
  manifest: AgentManifest;
  manifest_yaml: string;
  attempts: number;
}

export interface GeneratedWorkflow {
  workflow_id: string;
  name: string;
  version: string;
  manifest: WorkflowManifest;
  manifest_yaml: string;
  attempts: number;
}

/** Raised when no attempt produced a deployable manifest: 422 / InvalidManifest, with the last errors. */
export class GenerationFailed extends OrchError {
  constructor(kind: 'agent' | 'workflow', attempts: number, lastErrors: string[]) {
    super(Errors.VALIDATION, `the model produced no valid ${kind} manifest in ${attempts} attempt${attempts === 1 ? '' : 's'}`, {
      details: lastErrors.map((message) => ({ message })),
    });
    this.name = 'GenerationFailed';
  }
}

/** The YAML of an answer: the first fenced block (```yaml / ```yml / ```), else the whole text. */
export function extractYaml(text: string): string {
  const fenced = /```(?:ya?ml)?[ \t]*\r?\n([\s\S]*?)```/i.exec(text);
  return (fenced?.[1] ?? text).trim();
}

const AGENT_PROMPT = `You write agent manifests for the orch agent orchestrator. Answer with exactly one YAML document in a \`\`\`yaml fenced block and nothing else.
Layout:
apiVersion: orch.dev/v1
kind: Agent
metadata: { name: <lower-case-with-dashes>, version: 1.0.0, description: <one sentence>, labels: { <key>: <value> } }
spec:
  runtime: { language: python | node | bash | go, version: <"3.12" for python, "20" for node, "5" for bash, "1.22" for go>, model: default }
  task: { instruction: <what the agent does> }
  execution: { mode: iterative, max_iterations: 3, validation: [ { type: exit_code, expected: 0 } ] }
  tools: [ fs.read, fs.write, fs.list, cmd.run ]
`;

const WORKFLOW_PROMPT = `You write workflow manifests for the orch agent orchestrator. Answer with exactly one YAML document in a \`\`\`yaml fenced block and nothing else.
Layout:
apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: <lower-case-with-dashes>, version: 1.0.0, description: <one sentence> }
spec:
  initial_state: <state name>
  states:
    <state name>:
      kind: Agent | System | Human | ParallelAgents | ContainerRun | ParallelContainerRun | Subworkflow
      # Agent: agent: <deployed agent name>, input: <Handlebars template>; System: command: <shell command>
      transitions: [ { condition: on_success, target: <state> }, { target: <state> } ]   # [] ends the workflow
`;

interface Candidate<M> {
  ok: boolean;
  manifest?: M;
  errors: string[];
}

export class ManifestGenerator {
  private readonly log: Logger;

  constructor(
    private readonly d: {
      llm: LlmRegistry;
      agents?: AgentService | undefined;
      workflows?: WorkflowDefinitionService | undefined;
      logger: Logger;
      attempts?: number;
      timeoutMs?: number;
    },
  ) {
    this.log = d.logger.child({ component: 'manifest-generator' });
  }

  /** Generates, validates and deploys an agent; `check` adds the caller's own requirements (each string is an error). */
  async agent(req: GenerateRequest, check: (m: AgentManifest) => string[] = () => []): Promise<GeneratedAgent> {
    const agents = this.d.agents;
    if (!agents) throw new OrchError(Errors.NOT_IMPLEMENTED, 'the agent registry is not available on this node');
    return this.loop('agent', AGENT_PROMPT, req, (yaml) => {
      const parsed = parseAgentManifest(yaml);
      if (!parsed.ok) return { ok: false, errors: parsed.errors.map((e) => `${e.field}: ${e.message}`) };
      const extra = check(parsed.manifest);
      return extra.length > 0 ? { ok: false, errors: extra } : { ok: true, manifest: parsed.manifest, errors: [] };
    }, async (yaml, manifest: AgentManifest, attempts) => {
      const r = await agents.deploy({ tenant: req.tenant, subject: req.subject, ...(req.roles ? { roles: req.roles } : {}), yaml });
      return { agent_id: r.agent_id, name: r.name, version: r.version, manifest, manifest_yaml: yaml, attempts };
    });
  }

  /** Generates, validates (the workflow parser: states, transitions, templates) and deploys a workflow. */
  async workflow(req: GenerateRequest): Promise<GeneratedWorkflow> {
    const workflows = this.d.workflows;
    if (!workflows) throw new OrchError(Errors.NOT_IMPLEMENTED, 'the workflow registry is not available on this node');
    return this.loop('workflow', WORKFLOW_PROMPT, req, (yaml) => {
      const parsed = parseWorkflowManifest(yaml);
      if (!parsed.ok) return { ok: false, errors: parsed.errors.map((e) => `${e.field}: ${e.message}`) };
      return { ok: true, manifest: parsed.manifest, errors: [] };
    }, async (yaml, manifest: WorkflowManifest, attempts) => {
      const r = await workflows.deploy({ tenant: req.tenant, subject: req.subject, ...(req.roles ? { roles: req.roles } : {}), yaml });
      return { workflow_id: r.workflow_id, name: r.name, version: r.version, manifest, manifest_yaml: yaml, attempts };
    });
  }

  private async loop<M, R>(
    kind: 'agent' | 'workflow',
    prompt: string,
    req: GenerateRequest,
    validate: (yaml: string) => Candidate<M>,
    deploy: (yaml: string, manifest: M, attempts: number) => Promise<R>,
  ): Promise<R> {
    if (typeof req.input !== 'string' || req.input.trim() === '') throw new OrchError(Errors.BAD_REQUEST, 'input must be a non-empty string');
    const attempts = this.d.attempts ?? DEFAULT_GENERATION_ATTEMPTS;
    const messages: LlmMessage[] = [
      { role: 'system', content: `${prompt}${req.requirements ? `\nRequirements:\n${req.requirements}\n` : ''}` },
      { role: 'user', content: req.input },
    ];
    let last: string[] = [];
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const timer = deadline(this.d.timeoutMs ?? DEFAULT_GENERATION_TIMEOUT_MS, [req.signal]);
      const res = await this.d.llm.complete({ alias: req.model ?? 'default', messages, tools: [], signal: timer.signal }).finally(() => timer.dispose());
      const answer = res.content ?? '';
      const yaml = extractYaml(answer);
      const c = validate(yaml);
      if (c.ok && c.manifest !== undefined) {
        try {
          const out = await deploy(yaml, c.manifest, attempt);
          this.log.info({ tenant: req.tenant, kind, attempts: attempt }, 'generated manifest deployed');
          return out;
        } catch (err) {
          // A name/version already taken (or a scope refusal) is something the model can fix; anything else is not.
          if (!isOrchError(err) || (err.code !== Errors.CONFLICT.code && err.code !== Errors.VALIDATION.code)) throw err;
          last = [err.message];
        }
      } else {
        last = c.errors;
      }
      this.log.debug({ tenant: req.tenant, kind, attempt, errors: last }, 'generated manifest refused');
      messages.push({ role: 'assistant', content: answer });
      messages.push({
        role: 'user',
        content: `That ${kind} manifest was refused:\n${last.map((e) => `- ${e}`).join('\n')}\nAnswer with the corrected manifest in one \`\`\`yaml block.`,
      });
    }
    throw new GenerationFailed(kind, attempts, last);
  }
}
