// `orch execution ls|get|cancel|logs` over the execution routes (CONTRACT.md): the executions of your tenant, one in
// detail, cancelling one, and its events. `logs` prints the events recorded so far (the stream with follow=false);
// `--follow` keeps the stream open until the execution ends, like `orch agent run` does.
import type { Command } from 'commander';
import { ApiClient } from './client.ts';
import { CliError, printJson, printTable } from './output.ts';
import { ExecutionPrinter, readSse, type EventJson } from './execution-events.ts';

interface GlobalOpts {
  json?: boolean;
  url?: string;
  token?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function clipped(v: unknown, max = 60): string {
  const s = v === null || v === undefined ? '-' : String(v).replace(/\s+/g, ' ').trim();
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

export function registerExecutionCommands(program: Command): void {
  const execution = program.command('execution').description('agent executions: list, inspect, cancel, read their events');
  const client = (): ApiClient => new ApiClient(program.opts<GlobalOpts>(), process.env);
  const json = (): boolean => program.opts<GlobalOpts>().json === true;
  const path = (id: string, suffix = ''): string => `/v1/executions/${encodeURIComponent(id)}${suffix}`;

  execution
    .command('ls')
    .description('list the executions of your tenant, newest first')
    .option('--agent <name-or-id>', 'only executions of this agent')
    .option('--status <status>', 'pending, running, completed, failed or cancelled')
    .option('--limit <n>', 'how many (1..200)', '20')
    .option('--offset <n>', 'executions to skip', '0')
    .action(async (o: { agent?: string; status?: string; limit: string; offset: string }) => {
      const api = client();
      const q = new URLSearchParams({ limit: o.limit, offset: o.offset });
      if (o.status) q.set('status', o.status);
      if (o.agent) {
        const id = UUID.test(o.agent) ? o.agent : (await api.request<{ agent_id: string }>('GET', `/v1/agents/lookup/${encodeURIComponent(o.agent)}`)).agent_id;
        q.set('agent_id', id);
      }
      const res = await api.request<{ executions: Record<string, unknown>[] }>('GET', `/v1/executions?${q.toString()}`);
      if (json()) printJson(res);
      else {
        const rows = res.executions.map((e) => ({ ...e, agent: `${String(e.agent_name)} ${String(e.agent_version)}`, input: clipped(e.input, 40) }));
        printTable(rows, ['execution_id', 'agent', 'status', 'iteration', 'created_at', 'input']);
      }
    });

  execution
    .command('get <id>')
    .description('one execution: status, iterations, tokens, final output or reason')
    .action(async (id: string) => {
      const e = await client().request<Record<string, unknown>>('GET', path(id));
      if (json()) {
        printJson(e);
        return;
      }
      const usage = e.usage as { prompt_tokens?: number; completion_tokens?: number } | undefined;
      const lines = [
        `execution   ${String(e.execution_id)}`,
        `agent       ${String(e.agent_name)} ${String(e.agent_version)} (${String(e.agent_id)})`,
        `status      ${String(e.status)}`,
        `iterations  ${String(e.iteration)}`,
        `tokens      ${usage?.prompt_tokens ?? 0} prompt, ${usage?.completion_tokens ?? 0} completion`,
        `created     ${String(e.created_at)}`,
        `started     ${String(e.started_at ?? '-')}`,
        `completed   ${String(e.completed_at ?? '-')}`,
        ...(e.workflow_execution_id ? [`workflow    ${String(e.workflow_execution_id)}`] : []),
        ...(e.container_id ? [`container   ${String(e.container_id)}`] : []),
        `input:`,
        `  ${String(e.input).trimEnd().split('\n').join('\n  ')}`,
        ...(e.final_output !== null && e.final_output !== undefined ? ['final output:', `  ${String(e.final_output).trimEnd().split('\n').join('\n  ')}`] : []),
        ...(e.reason ? [`reason: ${String(e.reason)}`] : []),
      ];
      process.stdout.write(`${lines.join('\n')}\n`);
    });

  execution
    .command('cancel <id>')
    .description('cancel a pending or running execution (its sandbox is killed)')
    .action(async (id: string) => {
      const res = await client().request<{ cancelled: boolean; status: string; error?: string }>('POST', path(id, '/cancel'));
      if (json()) printJson(res);
      else if (res.cancelled) process.stdout.write(`${res.status === 'cancelled' ? 'cancelled' : 'cancelling'} ${id}\n`);
      if (!res.cancelled) throw new CliError(res.error ?? `cannot cancel ${id}`);
    });

  execution
    .command('logs <id>')
    .description("an execution's events so far: iterations, output, tool calls, the outcome (--follow: until it ends)")
    .option('-f, --follow', 'keep printing events until the execution ends')
    .action(async (id: string, o: { follow?: boolean }) => {
      const res = await client().raw('GET', path(id, `/stream${o.follow ? '' : '?follow=false'}`));
      const printer = new ExecutionPrinter();
      await readSse(res, (ev: EventJson) => {
        const [variant, value] = Object.entries(ev)[0] ?? ['', {}];
        if (json()) process.stdout.write(`${JSON.stringify(ev)}\n`);
        else for (const line of printer.lines(variant, value)) process.stdout.write(`${line}\n`);
        return variant === 'execution_completed' || variant === 'execution_failed';
      });
    });
}
