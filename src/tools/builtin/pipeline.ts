// The execution pipeline and generative authoring tools of seed 001: orch.execute.intent, orch.execute.status
// (orch.execute.wait is registered with the workflow run tools: it is orch.workflow.wait on the pipeline id),
// orch.agent.generate and orch.workflow.generate. See src/pipeline/ and docs/PIPELINE.md.
import type { IntentPipeline } from '../../pipeline/intent.ts';
import type { ManifestGenerator } from '../../pipeline/generate.ts';
import type { ToolCallContext, ToolDefinition, ToolOutcome } from '../types.ts';
import { fail, ok, schema, str } from './util.ts';

export interface PipelineToolDeps {
  /** Absent when the node has no LLM, agent registry or workflow runs: the tools answer NotAvailable. */
  pipeline?: IntentPipeline | undefined;
  generator?: ManifestGenerator | undefined;
}

function caller(ctx: ToolCallContext): { tenant: string; subject: string; roles: ToolCallContext['principal']['roles'] } {
  return { tenant: ctx.tenantId, subject: ctx.principal.subject, roles: ctx.principal.roles };
}

export function pipelineTools(deps: PipelineToolDeps): ToolDefinition[] {
  const noPipeline = (): ToolOutcome => fail('NotAvailable', 'the execution pipeline needs the agent registry, workflow runs and an LLM provider, which this node does not have');
  const noGenerator = (): ToolOutcome => fail('NotAvailable', 'manifest generation needs an LLM provider, which this node does not have');
  return [
    {
      name: 'orch.execute.intent',
      description:
        'Run an intent as code: discover (or generate) a code-writing agent for the language, run it in an isolated sandbox, and return a pipeline_execution_id (see orch.execute.status / orch.execute.wait).',
      inputSchema: schema(
        {
          intent: { type: 'string' },
          inputs: { type: 'object' },
          language: { type: 'string', enum: ['python', 'javascript', 'bash'], default: 'python' },
          volume_id: { type: 'string' },
          timeout_seconds: { type: 'integer', minimum: 1 },
        },
        ['intent'],
      ),
      required: ['intent'],
      skipJudge: false,
      async handler(ctx, args) {
        if (!deps.pipeline) return noPipeline();
        const r = await deps.pipeline.start({
          ...caller(ctx),
          intent: args.intent,
          inputs: args.inputs ?? undefined,
          language: args.language ?? undefined,
          volume_id: args.volume_id ?? undefined,
          timeout_seconds: args.timeout_seconds ?? undefined,
          ...(ctx.signal ? { signal: ctx.signal } : {}),
        });
        return ok(r);
      },
    },
    {
      name: 'orch.execute.status',
      description: 'Status of a pipeline: running (status, current_state); completed (final_result, duration_ms, reused_existing_agent); failed (reason, failed_at_state).',
      inputSchema: schema({ pipeline_execution_id: { type: 'string' } }, ['pipeline_execution_id']),
      required: ['pipeline_execution_id'],
      skipJudge: true,
      async handler(ctx, args) {
        if (!deps.pipeline) return noPipeline();
        return ok(await deps.pipeline.status(ctx.tenantId, args.pipeline_execution_id));
      },
    },
    {
      // Seed 001 lists orch.execute with its required `prompt` only. Here it is the one-call form of the pipeline:
      // orch.execute.intent with the prompt as the intent, then waiting for the pipeline's end, so a client
      // without a wait loop gets the result (or the failure) in one answer.
      name: 'orch.execute',
      description:
        'Run a prompt as code in one call: the execution pipeline (orch.execute.intent) started with the prompt as its intent, answered when it ends with its status and result.',
      inputSchema: schema(
        {
          prompt: { type: 'string' },
          inputs: { type: 'object' },
          language: { type: 'string', enum: ['python', 'javascript', 'bash'], default: 'python' },
          timeout_seconds: { type: 'integer', minimum: 1 },
          poll_interval_ms: { type: 'integer', minimum: 50, default: 500 },
        },
        ['prompt'],
      ),
      required: ['prompt'],
      skipJudge: false,
      async handler(ctx, args) {
        if (!deps.pipeline) return noPipeline();
        const pipeline = deps.pipeline;
        const started = await pipeline.start({
          ...caller(ctx),
          intent: args.prompt,
          inputs: args.inputs ?? undefined,
          language: args.language ?? undefined,
          timeout_seconds: args.timeout_seconds ?? undefined,
          ...(ctx.signal ? { signal: ctx.signal } : {}),
        });
        const every = typeof args.poll_interval_ms === 'number' ? args.poll_interval_ms : 500;
        for (;;) {
          const st = await pipeline.status(ctx.tenantId, started.pipeline_execution_id);
          if (st.status === 'completed' || st.status === 'failed' || st.status === 'cancelled') {
            return ok({ ...st, reused_existing_agent: started.reused_existing_agent });
          }
          // The pipeline's own timeout (timeout_seconds) ends it; a caller that goes away stops only the waiting.
          if (ctx.signal?.aborted) return fail('Cancelled', `stopped waiting for pipeline ${started.pipeline_execution_id}; it goes on (orch.execute.status)`);
          await new Promise((r) => setTimeout(r, every));
        }
      },
    },
    {
      name: 'orch.agent.generate',
      description:
        'Write an agent manifest from a natural-language description with the LLM; it is validated by the manifest parser (refused answers are sent back for correction) and deployed only when valid.',
      inputSchema: schema({ input: { type: 'string' } }, ['input']),
      required: ['input'],
      skipJudge: false,
      async handler(ctx, args) {
        if (!deps.generator) return noGenerator();
        const r = await deps.generator.agent({ ...caller(ctx), input: str(args.input), ...(ctx.signal ? { signal: ctx.signal } : {}) });
        return ok({ tool: 'orch.agent.generate', status: 'deployed', deployed: true, agent_id: r.agent_id, name: r.name, version: r.version, attempts: r.attempts, manifest_yaml: r.manifest_yaml });
      },
    },
    {
      name: 'orch.workflow.generate',
      description:
        'Write a workflow manifest from a natural-language description with the LLM; it is validated by the workflow parser (refused answers are sent back for correction) and deployed only when valid.',
      inputSchema: schema({ input: { type: 'string' } }, ['input']),
      required: ['input'],
      skipJudge: false,
      async handler(ctx, args) {
        if (!deps.generator) return noGenerator();
        const r = await deps.generator.workflow({ ...caller(ctx), input: str(args.input), ...(ctx.signal ? { signal: ctx.signal } : {}) });
        return ok({ tool: 'orch.workflow.generate', status: 'deployed', deployed: true, workflow_id: r.workflow_id, name: r.name, version: r.version, attempts: r.attempts, manifest_yaml: r.manifest_yaml });
      },
    },
  ];
}
