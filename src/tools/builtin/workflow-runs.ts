// orch.workflow.* tools over workflow runs (seed 001 "Workflow management", exact result shapes): run,
// executions.list, executions.get, logs, status, wait (and its alias orch.execute.wait), cancel, signal, remove.
// The control tools (cancel, signal, remove) report failure inside a successful result (`false` with `error`).
import { isOrchError } from '../../errors/catalog.ts';
import type { WorkflowExecutionService, WorkflowExecutionView } from '../../workflow/service.ts';
import { isTerminalStatus } from '../../workflow/engine/repo.ts';
import type { ToolCallContext, ToolDefinition, ToolOutcome } from '../types.ts';
import { fail, int, ok, schema, str } from './util.ts';

export interface WorkflowRunToolDeps {
  /** Late-bound: absent on a node that runs no workflows (the tools then answer NotAvailable). */
  runs: () => WorkflowExecutionService | undefined;
}

const ID = { execution_id: { type: 'string', description: 'workflow execution UUID' } };

function summary(v: WorkflowExecutionView): Record<string, unknown> {
  return {
    execution_id: v.execution_id,
    workflow_id: v.workflow_id,
    workflow_name: v.workflow_name,
    status: v.status,
    current_state: v.current_state,
    started_at: v.started_at,
    last_transition_at: v.last_transition_at,
    completed_at: v.completed_at,
  };
}

function statusOf(v: WorkflowExecutionView): Record<string, unknown> {
  return {
    execution_id: v.execution_id,
    workflow_id: v.workflow_id,
    status: v.status,
    current_state: v.current_state,
    started_at: v.started_at,
    last_transition_at: v.last_transition_at,
  };
}

/** A failure of a control tool as the seed shows it: a successful result with `<flag>: false` and `error`. */
function controlFailure(tool: string, flag: string, id: string, err: unknown): ToolOutcome {
  const message = isOrchError(err) ? (err.spec.code === 'not_found' ? 'execution not found' : err.message) : String((err as Error)?.message ?? err);
  return ok({ tool, [flag]: false, execution_id: id, error: message });
}

export function workflowRunTools(deps: WorkflowRunToolDeps): ToolDefinition[] {
  const svc = (): WorkflowExecutionService | undefined => deps.runs();
  const notAvailable = (): ToolOutcome => fail('NotAvailable', 'workflow runs are not available on this node');

  const wait = (name: string): ToolDefinition => ({
    name,
    description:
      name === 'orch.execute.wait'
        ? 'Wait for a pipeline (workflow execution) to finish (alias of orch.workflow.wait).'
        : 'Wait for a workflow execution to finish, polling every poll_interval_seconds up to timeout_seconds.',
    inputSchema: schema(
      { ...ID, poll_interval_seconds: { type: 'integer', default: 5 }, timeout_seconds: { type: 'integer', default: 300 } },
      ['execution_id'],
    ),
    required: ['execution_id'],
    skipJudge: true,
    async handler(ctx: ToolCallContext, args) {
      const s = svc();
      if (!s) return notAvailable();
      const id = str(args.execution_id);
      await s.get(ctx.tenantId, id); // 400/404 before waiting
      const pollMs = int(args.poll_interval_seconds, 5, 1, 3600) * 1000;
      const timeoutMs = int(args.timeout_seconds, 300, 0, 86_400) * 1000;
      await s.waitRow(id, { timeoutMs, pollMs, ...(ctx.signal ? { signal: ctx.signal } : {}) });
      const v = await s.get(ctx.tenantId, id);
      if (!isTerminalStatus(v.status)) return ok({ execution_id: id, status: v.status, current_state: v.current_state, timed_out: true });
      return ok({
        execution_id: id,
        workflow_id: v.workflow_id,
        status: v.status,
        current_state: v.current_state,
        blackboard: v.blackboard,
        started_at: v.started_at,
        last_transition_at: v.last_transition_at,
        last_output: v.final_output,
        final_output: v.final_output,
        ...(v.error ? { error: v.error } : {}),
      });
    },
  });

  return [
    {
      name: 'orch.workflow.run',
      description: 'Run a deployed workflow (latest version unless `version` is given).',
      inputSchema: schema(
        {
          name: { type: 'string' },
          intent: { type: 'string' },
          input: { type: 'object', default: {} },
          blackboard: { type: 'object' },
          version: { type: 'string' },
        },
        ['name'],
      ),
      required: ['name'],
      skipJudge: false,
      async handler(ctx, args) {
        const s = svc();
        if (!s) return notAvailable();
        const out = await s.run({
          tenant: ctx.tenantId,
          workflow: str(args.name),
          input: args.input ?? {},
          intent: args.intent ?? undefined,
          blackboard: args.blackboard ?? undefined,
          version: typeof args.version === 'string' ? args.version : undefined,
          userId: ctx.principal.subject,
        });
        return ok(out);
      },
    },
    {
      name: 'orch.workflow.executions.list',
      description: 'List workflow executions, optionally of one workflow (UUID or name).',
      inputSchema: schema({
        workflow_id: { type: 'string' },
        limit: { type: 'integer', default: 20 },
        offset: { type: 'integer', default: 0 },
        tenant_id: { type: 'string' },
      }),
      required: [],
      skipJudge: true,
      async handler(ctx, args) {
        const s = svc();
        if (!s) return notAvailable();
        const limit = int(args.limit, 20, 1, 200);
        const offset = int(args.offset, 0, 0);
        const list = await s.list(ctx.tenantId, { ...(typeof args.workflow_id === 'string' ? { workflow: args.workflow_id } : {}), limit, offset });
        return ok({ executions: list.map(summary), count: list.length, limit, offset });
      },
    },
    {
      name: 'orch.workflow.executions.get',
      description: 'A workflow execution in detail: status, input, blackboard, state outputs, timestamps.',
      inputSchema: schema({ ...ID, tenant_id: { type: 'string' } }, ['execution_id']),
      required: ['execution_id'],
      skipJudge: true,
      async handler(ctx, args) {
        const s = svc();
        if (!s) return notAvailable();
        return ok(await s.get(ctx.tenantId, str(args.execution_id)));
      },
    },
    {
      name: 'orch.workflow.logs',
      description: 'Workflow log events, oldest first (page of limit, default 50, max 200).',
      inputSchema: schema({ ...ID, limit: { type: 'integer', default: 50 }, offset: { type: 'integer', default: 0 } }, ['execution_id']),
      required: ['execution_id'],
      skipJudge: true,
      async handler(ctx, args) {
        const s = svc();
        if (!s) return notAvailable();
        const out = await s.logs(ctx.tenantId, str(args.execution_id), int(args.limit, 50, 1, 200), int(args.offset, 0, 0));
        return ok({ tool: 'orch.workflow.logs', execution_id: out.execution_id, status: out.status, events: out.events, total: out.total, limit: out.limit, offset: out.offset });
      },
    },
    {
      name: 'orch.workflow.status',
      description: 'Status of a workflow execution: current state and timestamps.',
      inputSchema: schema({ ...ID, tenant_id: { type: 'string' } }, ['execution_id']),
      required: ['execution_id'],
      skipJudge: true,
      async handler(ctx, args) {
        const s = svc();
        if (!s) return notAvailable();
        return ok(statusOf(await s.get(ctx.tenantId, str(args.execution_id))));
      },
    },
    wait('orch.workflow.wait'),
    wait('orch.execute.wait'),
    {
      name: 'orch.workflow.cancel',
      description: 'Cancel a running workflow execution.',
      inputSchema: schema(ID, ['execution_id']),
      required: ['execution_id'],
      skipJudge: true,
      async handler(ctx, args) {
        const s = svc();
        if (!s) return notAvailable();
        const id = str(args.execution_id);
        try {
          const out = await s.cancel(ctx.tenantId, id);
          if (!out.cancelled) return ok({ tool: 'orch.workflow.cancel', cancelled: false, execution_id: id, error: out.error ?? 'execution is already terminal' });
          return ok({ tool: 'orch.workflow.cancel', cancelled: true, execution_id: id });
        } catch (err) {
          return controlFailure('orch.workflow.cancel', 'cancelled', id, err);
        }
      },
    },
    {
      name: 'orch.workflow.signal',
      description: 'Deliver human input to a workflow execution waiting at a Human state.',
      inputSchema: schema({ ...ID, response: { type: 'string' } }, ['execution_id', 'response']),
      required: ['execution_id', 'response'],
      skipJudge: true,
      async handler(ctx, args) {
        const s = svc();
        if (!s) return notAvailable();
        const id = str(args.execution_id);
        try {
          const out = await s.signal(ctx.tenantId, id, str(args.response), ctx.principal.subject);
          if (!out.signalled) return ok({ tool: 'orch.workflow.signal', signalled: false, execution_id: id, error: out.error ?? 'execution is not in waiting_for_human_input' });
          return ok({ tool: 'orch.workflow.signal', signalled: true, execution_id: id });
        } catch (err) {
          return controlFailure('orch.workflow.signal', 'signalled', id, err);
        }
      },
    },
    {
      name: 'orch.workflow.remove',
      description: 'Delete a terminal workflow execution and its events.',
      inputSchema: schema(ID, ['execution_id']),
      required: ['execution_id'],
      skipJudge: true,
      async handler(ctx, args) {
        const s = svc();
        if (!s) return notAvailable();
        const id = str(args.execution_id);
        try {
          await s.remove(ctx.tenantId, id);
          return ok({ tool: 'orch.workflow.remove', removed: true, execution_id: id });
        } catch (err) {
          const e = isOrchError(err) && err.spec.code === 'conflict' ? new Error('execution is still in progress') : err;
          return controlFailure('orch.workflow.remove', 'removed', id, e);
        }
      },
    },
  ];
}
