// `orch agent deploy|ls|run` (CONTRACT.md). `run` follows the execution's SSE stream live, prints each event (with
// each iteration's tool calls and durations, execution-events.ts) and a progress line, and exits non-zero when the
// execution does not complete.
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { ApiClient } from './client.ts';
import { CliError, printJson, printTable } from './output.ts';
import { ExecutionPrinter, readSse } from './execution-events.ts';

interface GlobalOpts {
  json?: boolean;
  url?: string;
  token?: string;
}

export function registerAgentCommands(program: Command): void {
  const agent = program.command('agent').description('agents: deploy manifests, list them, run them');
  const client = (): ApiClient => new ApiClient(program.opts<GlobalOpts>(), process.env);

  agent
    .command('deploy')
    .description('deploy an agent manifest (YAML)')
    .requiredOption('-f, --file <file>', 'the manifest file')
    .option('--force', 'overwrite an existing name and version')
    .action(async (opts: { file: string; force?: boolean }) => {
      const yaml = await readFile(opts.file, 'utf8').catch((err: Error) => {
        throw new CliError(`cannot read ${opts.file}: ${err.message}`);
      });
      const res = await client().request<{ agent_id: string; name: string; version: string }>('POST', '/v1/agents', {
        manifest_yaml: yaml,
        force: opts.force === true,
      });
      if (program.opts<GlobalOpts>().json) printJson(res);
      else process.stdout.write(`deployed ${res.name} ${res.version} (${res.agent_id})\n`);
    });

  agent
    .command('ls')
    .description('list the agents of your tenant')
    .action(async () => {
      const res = await client().request<{ agents: Record<string, unknown>[] }>('GET', '/v1/agents');
      if (program.opts<GlobalOpts>().json) printJson(res);
      else printTable(res.agents, ['agent_id', 'name', 'version', 'tenant_id']);
    });

  agent
    .command('run <name>')
    .description('run an agent and follow its events live; exits non-zero unless it completes')
    .requiredOption('--input <text>', 'the task input')
    .action(async (name: string, opts: { input: string }) => {
      const g = program.opts<GlobalOpts>();
      const api = client();
      const found = await api.request<{ agent_id: string }>('GET', `/v1/agents/lookup/${encodeURIComponent(name)}`);
      const { execution_id } = await api.request<{ execution_id: string }>('POST', `/v1/agents/${found.agent_id}/execute`, { input: opts.input });
      const res = await api.raw('GET', `/v1/executions/${execution_id}/stream`);
      let ok = false;
      let iteration = 0;
      const printer = new ExecutionPrinter();
      const started = Date.now();
      const progress = (label: string): void => {
        if (!g.json && process.stderr.isTTY) process.stderr.write(`\r\x1b[2K[${((Date.now() - started) / 1000).toFixed(1)} s] iteration ${iteration}: ${label}`);
      };
      await readSse(res, (ev) => {
        const [variant, value] = Object.entries(ev)[0] ?? ['', {}];
        if (typeof value.iteration_number === 'number') iteration = value.iteration_number;
        if (g.json) process.stdout.write(`${JSON.stringify(ev)}\n`);
        else {
          if (process.stderr.isTTY) process.stderr.write('\r\x1b[2K');
          for (const line of printer.lines(variant, value)) process.stdout.write(`${line}\n`);
          progress(variant);
        }
        if (variant === 'execution_completed') ok = true;
        return variant === 'execution_completed' || variant === 'execution_failed';
      });
      if (!g.json && process.stderr.isTTY) process.stderr.write('\r\x1b[2K');
      if (!ok) throw new CliError(`execution ${execution_id} did not complete`);
    });
}
