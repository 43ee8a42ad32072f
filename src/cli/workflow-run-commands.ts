// `orch workflow run|status|logs|signal|cancel` and `orch approvals ls|approve|reject` (CONTRACT.md) over the
// workflow run and human-approval routes. `run --wait` follows the run's SSE stream, prints each state's output
// (compact) as it completes and the final output, and exits non-zero unless the run completes. The `workflow` group is shared with the definition commands (deploy, ls, ...): found or created.
import type { Command } from 'commander';
import { ApiClient } from './client.ts';
import { readSse } from './execution-events.ts';
import { CliError, compactJson, printJson, printTable } from './output.ts';

interface GlobalOpts {
  json?: boolean;
  url?: string;
  token?: string;
}

function parseJson(text: string | undefined, what: string): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new CliError(`${what} is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * `  ✓ build (success): {"stdout":"…"}`. The event says how the state ended; its output is the blackboard entry of
 * the state's name, read from the run (written in the same transaction as the event, so it is there).
 */
async function stateLine(api: ApiClient, id: string, p: Record<string, unknown>): Promise<string> {
  const name = String(p.state_name);
  const status = String(p.status ?? '');
  const mark = status === 'success' ? '✓' : '✗';
  const run = await api.request<{ blackboard?: Record<string, unknown> }>('GET', `/v1/workflows/executions/${encodeURIComponent(id)}`);
  const out = run.blackboard && name in run.blackboard ? `: ${compactJson(run.blackboard[name])}` : '';
  return `  ${mark} ${name} (${status})${out}${p.error ? `\n    error: ${String(p.error)}` : ''}`;
}

function finalOutput(v: unknown): string {
  if (v === null || v === undefined) return 'final output: none (the workflow has no output_template)';
  return `final output:\n${typeof v === 'string' ? v : JSON.stringify(v, null, 2)}`;
}

/** The blackboard for people: one `key: value` line each, values as compact JSON. */
function blackboardLines(bb: unknown): string[] {
  if (typeof bb !== 'object' || bb === null) return [];
  const entries = Object.entries(bb as Record<string, unknown>);
  if (entries.length === 0) return ['blackboard: (empty)'];
  return ['blackboard:', ...entries.map(([k, v]) => `  ${k}: ${compactJson(v, 500)}`)];
}

async function followRun(api: ApiClient, id: string, json: boolean): Promise<string> {
  const res = await api.raw('GET', `/v1/workflows/executions/${id}/stream`);
  let outcome = 'unknown';
  await readSse(res, async (ev) => {
    const [type, p] = Object.entries(ev)[0] ?? ['', {}];
    if (json) process.stdout.write(`${JSON.stringify(ev)}\n`);
    else if (type === 'WorkflowStateCompleted') process.stdout.write(`${await stateLine(api, id, p)}\n`);
    else if (type === 'WorkflowExecutionCompleted') process.stdout.write(`completed\n${finalOutput(p.final_output)}\n`);
    else if (type === 'WorkflowStateEntered') process.stdout.write(`→ ${String(p.state_name)} (visit ${String(p.iteration_number)})\n`);
    else if (type === 'WorkflowWaitingForHumanInput') process.stdout.write(`  waiting for human input: ${String(p.prompt)} (approval ${String(p.approval_id)})\n`);
    else if (type.startsWith('WorkflowExecution') && type !== 'WorkflowExecutionStarted') process.stdout.write(`${type.slice('WorkflowExecution'.length).toLowerCase()}${p.reason ? `: ${String(p.reason)}` : ''}\n`);
    if (type === 'WorkflowExecutionCompleted') outcome = 'completed';
    else if (type === 'WorkflowExecutionFailed') outcome = 'failed';
    else if (type === 'WorkflowExecutionCancelled') outcome = 'cancelled';
    else return false;
    return true;
  });
  return outcome;
}

export function registerWorkflowRunCommands(program: Command): void {
  const workflow = program.commands.find((c) => c.name() === 'workflow') ?? program.command('workflow').description('workflows: deploy, run and follow them');
  const client = (): ApiClient => new ApiClient(program.opts<GlobalOpts>(), process.env);
  const json = (): boolean => program.opts<GlobalOpts>().json === true;

  workflow
    .command('run <name>')
    .description('run a deployed workflow; --wait follows it and exits non-zero unless it completes')
    .option('--input <json>', 'the start input (a JSON object)')
    .option('--intent <text>', 'the intent, injected into the blackboard')
    .option('--blackboard <json>', 'pairs merged into the initial blackboard')
    .option('--version <version>', 'a deployed version (default: the latest)')
    .option('--wait', 'follow the run until it ends')
    .action(async (name: string, o: { input?: string; intent?: string; blackboard?: string; version?: string; wait?: boolean }) => {
      const api = client();
      const body = {
        ...(o.input !== undefined ? { input: parseJson(o.input, '--input') } : {}),
        ...(o.intent !== undefined ? { intent: o.intent } : {}),
        ...(o.blackboard !== undefined ? { blackboard: parseJson(o.blackboard, '--blackboard') } : {}),
        ...(o.version !== undefined ? { version: o.version } : {}),
      };
      const res = await api.request<{ execution_id: string; status: string }>('POST', `/v1/workflows/${encodeURIComponent(name)}/run`, body);
      if (json() && !o.wait) printJson(res);
      else if (!json()) process.stdout.write(`started ${res.execution_id}\n`);
      if (o.wait) {
        const end = await followRun(api, res.execution_id, json());
        if (end !== 'completed') throw new CliError(`workflow run ${res.execution_id} ${end}`);
      }
    });

  workflow
    .command('status <id>')
    .description('status, current state and blackboard of a workflow run')
    .action(async (id: string) => {
      const res = await client().request<Record<string, unknown>>('GET', `/v1/workflows/executions/${encodeURIComponent(id)}`);
      if (json()) printJson(res);
      else {
        printTable([res], ['execution_id', 'workflow_name', 'status', 'current_state', 'total_transitions', 'last_transition_at']);
        if (res.error) process.stdout.write(`error: ${String(res.error)}\n`);
        for (const line of blackboardLines(res.blackboard)) process.stdout.write(`${line}\n`);
        if (res.final_output !== null && res.final_output !== undefined) process.stdout.write(`final output: ${JSON.stringify(res.final_output, null, 2)}\n`);
      }
    });

  workflow
    .command('logs <id>')
    .description('log events of a workflow run (paged)')
    .option('--limit <n>', 'page size (max 200)', '50')
    .option('--offset <n>', 'events to skip', '0')
    .action(async (id: string, o: { limit: string; offset: string }) => {
      const res = await client().request<{ events: Record<string, unknown>[] }>(
        'GET',
        `/v1/workflows/executions/${encodeURIComponent(id)}/logs?limit=${encodeURIComponent(o.limit)}&offset=${encodeURIComponent(o.offset)}`,
      );
      if (json()) printJson(res);
      else printTable(res.events, ['sequence', 'event_type', 'state_name', 'iteration_number', 'recorded_at']);
    });

  workflow
    .command('signal <id> <response>')
    .description('deliver human input to a run waiting at a Human state')
    .action(async (id: string, response: string) => {
      const res = await client().request('POST', `/v1/workflows/executions/${encodeURIComponent(id)}/signal`, { response });
      if (json()) printJson(res);
      else process.stdout.write(`signalled ${id}\n`);
    });

  workflow
    .command('cancel <id>')
    .description('cancel a workflow run')
    .action(async (id: string) => {
      const res = await client().request<{ cancelled: boolean; error?: string }>('POST', `/v1/workflows/executions/${encodeURIComponent(id)}/cancel`);
      if (json()) printJson(res);
      else if (res.cancelled) process.stdout.write(`cancelling ${id}\n`);
      if (!res.cancelled) throw new CliError(res.error ?? `cannot cancel ${id}`);
    });
}

export function registerApprovalCommands(program: Command): void {
  const approvals = program.command('approvals').description('human approval requests of Human workflow states');
  const client = (): ApiClient => new ApiClient(program.opts<GlobalOpts>(), process.env);
  const json = (): boolean => program.opts<GlobalOpts>().json === true;

  approvals
    .command('ls')
    .description('pending approval requests')
    .action(async () => {
      const res = await client().request<{ pending_requests: Record<string, unknown>[] }>('GET', '/v1/human-approvals');
      if (json()) printJson(res);
      else printTable(res.pending_requests, ['id', 'execution_id', 'prompt', 'created_at', 'timeout_seconds']);
    });

  approvals
    .command('approve <id>')
    .description('approve a pending request (the run follows input_equals_yes)')
    .option('--feedback <text>', 'feedback, available as {{human.feedback}}')
    .action(async (id: string, o: { feedback?: string }) => {
      const res = await client().request('POST', `/v1/human-approvals/${encodeURIComponent(id)}/approve`, o.feedback !== undefined ? { feedback: o.feedback } : {});
      if (json()) printJson(res);
      else process.stdout.write(`approved ${id}\n`);
    });

  approvals
    .command('reject <id>')
    .description('reject a pending request (the run follows input_equals_no)')
    .requiredOption('--reason <text>', 'why; available as {{human.feedback}}')
    .action(async (id: string, o: { reason: string }) => {
      const res = await client().request('POST', `/v1/human-approvals/${encodeURIComponent(id)}/reject`, { reason: o.reason });
      if (json()) printJson(res);
      else process.stdout.write(`rejected ${id}\n`);
    });
}
