// Spans and metrics of agent executions and workflow runs, kept here so the loop and the engine each call a few
// one-line hooks. Trace shape:
//   orch.execution {execution id, agent, tenant}
//     └─ orch.execution.iteration {n}            one per iteration of the refinement loop
//          ├─ orch.llm.call {model, tokens}      each model turn actually sent (a journal replay sends none)
//          └─ orch.tool_call {tool, origin}      made by the tool catalog (src/tools/catalog.ts)
//   orch.workflow.run {workflow execution id, workflow, tenant}
//     └─ orch.workflow.state {state, kind, visit}
import { SpanStatusCode, context, trace, type Span } from '@opentelemetry/api';
import { failSpan, inSpan, startSpan, unrecordedParent, withSpan } from './tracing.ts';
import { orchMetrics, secondsBetween, type RunStatus } from './metrics.ts';

interface ExecutionLike {
  id: string;
  tenant_id: string;
  agent_id: string;
  agent_name: string;
  started_at: Date | null;
}

interface LlmUsageLike {
  usage: { prompt_tokens: number; completion_tokens: number };
}

/** One incarnation of one execution's loop: its span, the current iteration's span and its metric labels. */
export class ExecutionTelemetry {
  private readonly span: Span;
  private iterationSpan: Span | undefined;
  private readonly labels: { agent: string; tenant: string };
  private startedAt: number;
  private ended = false;

  constructor(private readonly row: ExecutionLike) {
    this.labels = { agent: row.agent_name, tenant: row.tenant_id };
    this.startedAt = row.started_at ? row.started_at.getTime() : Date.now();
    this.span = startSpan('orch.execution', {
      'orch.execution.id': row.id,
      'orch.agent.id': row.agent_id,
      'orch.agent.name': row.agent_name,
      'orch.tenant.id': row.tenant_id,
    });
  }

  /** The execution went from pending to running (written once; a resumed run does not count again). */
  started(): void {
    this.startedAt = Date.now();
    orchMetrics().executionsStarted.add(1, this.labels);
  }

  /** Runs `fn` with the execution span active. */
  within<T>(fn: () => T): T {
    return withSpan(this.span, fn);
  }

  /** Iteration `n` begins: the previous iteration's span (if still open) ends, a new one starts. */
  iteration(n: number): void {
    this.iterationSpan?.end();
    this.iterationSpan = startSpan('orch.execution.iteration', { 'orch.execution.id': this.row.id, 'orch.iteration': n }, undefined, trace.setSpan(context.active(), this.span));
  }

  /** Runs `fn` under the current iteration's span (the execution's when no iteration has begun). */
  inIteration<T>(fn: () => T): T {
    return withSpan(this.iterationSpan ?? this.span, fn);
  }

  /** The current iteration ended, failed with `failure` or passed. */
  iterationEnded(failure?: { type: string; message: string }): void {
    const span = this.iterationSpan;
    if (!span) return;
    this.iterationSpan = undefined;
    if (failure) {
      span.setAttribute('orch.iteration.error_type', failure.type);
      span.setStatus({ code: SpanStatusCode.ERROR, message: failure.message });
    }
    span.end();
  }

  /** One model call: a span with its token counts, the token counter and the latency histogram. */
  llmCall<T extends LlmUsageLike>(model: string, fn: () => Promise<T>): Promise<T> {
    const m = orchMetrics();
    const t0 = performance.now();
    return inSpan('orch.llm.call', { 'gen_ai.request.model': model, 'orch.execution.id': this.row.id }, async (span) => {
      try {
        const res = await fn();
        span.setAttributes({ 'gen_ai.usage.input_tokens': res.usage.prompt_tokens, 'gen_ai.usage.output_tokens': res.usage.completion_tokens });
        m.llmTokens.add(res.usage.prompt_tokens, { model, ...this.labels, type: 'prompt' });
        m.llmTokens.add(res.usage.completion_tokens, { model, ...this.labels, type: 'completion' });
        m.llmCallDuration.record((performance.now() - t0) / 1000, { model, outcome: 'ok' });
        return res;
      } catch (err) {
        m.llmCallDuration.record((performance.now() - t0) / 1000, { model, outcome: 'error' });
        throw err;
      }
    });
  }

  /** The terminal status was written. */
  finished(status: RunStatus, reason?: string): void {
    const m = orchMetrics();
    m.executionsFinished.add(1, { ...this.labels, status });
    m.executionDuration.record(secondsBetween(this.startedAt), { ...this.labels, status });
    this.span.setAttribute('orch.execution.status', status);
    if (status !== 'completed') this.span.setStatus({ code: SpanStatusCode.ERROR, message: reason ?? status });
  }

  /** Ends whatever is open. Idempotent. */
  end(err?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.iterationSpan?.end();
    this.iterationSpan = undefined;
    if (err !== undefined) failSpan(this.span, err);
    this.span.end();
  }
}

interface WorkflowRunLike {
  id: string;
  tenant_id: string;
  workflow_name: string;
  started_at: Date;
}

/** A workflow run was written (its first event): counted once, on the node that took the request. */
export function workflowStarted(workflow: string, tenant: string): void {
  orchMetrics().workflowsStarted.add(1, { workflow, tenant });
}

/** The span of one incarnation of a workflow run; `fn` runs with it active. */
export function inWorkflowRunSpan<T>(row: WorkflowRunLike, fn: () => Promise<T>): Promise<T> {
  if (unrecordedParent()) return fn();
  return inSpan('orch.workflow.run', { 'orch.workflow.execution_id': row.id, 'orch.workflow.name': row.workflow_name, 'orch.tenant.id': row.tenant_id }, () => fn());
}

/** The span of one visit of one state; a result with an error marks it failed. */
export function inWorkflowStateSpan<T extends { error?: string | undefined }>(row: WorkflowRunLike, state: string, kind: string, visit: number, fn: () => Promise<T>): Promise<T> {
  // Not recorded: no wrapper either (one promise less per step; see inSpan).
  if (unrecordedParent()) return fn();
  return inSpan('orch.workflow.state', { 'orch.workflow.execution_id': row.id, 'orch.workflow.state': state, 'orch.workflow.state_kind': kind, 'orch.workflow.visit': visit }, async (span) => {
    const result = await fn();
    if (result.error) span.setStatus({ code: SpanStatusCode.ERROR, message: result.error });
    return result;
  });
}

/** A workflow run reached its terminal status. */
export function workflowFinished(row: WorkflowRunLike, status: RunStatus): void {
  const m = orchMetrics();
  const labels = { workflow: row.workflow_name, tenant: row.tenant_id };
  m.workflowsFinished.add(1, { ...labels, status });
  m.workflowDuration.record(secondsBetween(row.started_at), { ...labels, status });
  const span = trace.getActiveSpan();
  if (span && status !== 'completed') span.setStatus({ code: SpanStatusCode.ERROR, message: status });
}

/** Tool-call span and latency around one catalog call; an outcome with ok false is recorded as an error. */
export function inToolCallSpan<T extends { ok: boolean; error?: { error: string } }>(tool: string, origin: string, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  return inSpan('orch.tool_call', { 'orch.tool.name': tool, 'orch.tool.origin': origin }, async (span) => {
    let outcome = 'error';
    try {
      const result = await fn();
      outcome = result.ok ? 'ok' : 'error';
      if (!result.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: result.error?.error ?? 'tool error' });
      return result;
    } finally {
      orchMetrics().toolCallDuration.record((performance.now() - t0) / 1000, { tool, origin, outcome });
    }
  });
}
