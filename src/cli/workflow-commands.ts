// `orch workflow deploy -f FILE [--force] [--scope S]`, `orch workflow ls [--scope S]`, `orch workflow get NAME`,
// `orch workflow versions NAME`, `orch workflow rm NAME [--version V]`, `orch workflow promote|demote NAME` over the
// workflow registry routes (CONTRACT.md). The run commands (run, status, logs, signal, cancel) live in
// workflow-run-commands.ts and join the same `workflow` group, which whichever registers first creates.
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { ApiClient } from './client.ts';
import { CliError, printJson, printTable } from './output.ts';

interface GlobalOpts {
  json?: boolean;
  url?: string;
  token?: string;
}

/** The shared `orch workflow` group. */
export function workflowGroup(program: Command): Command {
  return program.commands.find((c) => c.name() === 'workflow') ?? program.command('workflow').description('workflows: deploy, run and follow them');
}

function path(name: string, suffix = ''): string {
  return `/v1/workflows/${encodeURIComponent(name)}${suffix}`;
}

export function registerWorkflowCommands(program: Command): void {
  const workflow = workflowGroup(program);
  const g = (): GlobalOpts => program.opts<GlobalOpts>();
  const client = (): ApiClient => new ApiClient(g(), process.env);

  // ---- definitions: deploy, ls, get, versions, rm, promote, demote
  workflow
    .command('deploy')
    .description('deploy a workflow manifest (YAML); an invalid manifest lists each field in error')
    .requiredOption('-f, --file <file>', 'the manifest file')
    .option('--force', 'overwrite an existing name and version')
    .option('--scope <scope>', 'user, tenant (default) or global (operator only)')
    .action(async (opts: { file: string; force?: boolean; scope?: string }) => {
      const yaml = await readFile(opts.file, 'utf8').catch((err: Error) => {
        throw new CliError(`cannot read ${opts.file}: ${err.message}`);
      });
      // Checked here first with the server's own parser, so every field in error is named on the one failure line
      // (the server would refuse it with the same 422 errors).
      // Loaded here: the parser (yaml, ajv, the template checks) is not paid for by every other command.
      const { parseWorkflowManifest } = await import('../workflow/manifest/parse.ts');
      const parsed = parseWorkflowManifest(yaml);
      if (!parsed.ok) throw new CliError(`invalid workflow manifest ${opts.file}: ${parsed.errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`);
      const res = await client().request<{ workflow_id: string; name: string; version: string; scope: string }>('POST', '/v1/workflows', {
        manifest_yaml: yaml,
        force: opts.force === true,
        ...(opts.scope ? { scope: opts.scope } : {}),
      });
      if (g().json) printJson(res);
      else process.stdout.write(`deployed ${res.name} ${res.version} in ${res.scope} scope (${res.workflow_id})\n`);
    });

  workflow
    .command('ls')
    .description('list the workflows you can see, each with its latest version')
    .option('--scope <scope>', 'visible (default), user, tenant or global')
    .action(async (opts: { scope?: string }) => {
      const q = opts.scope ? `?scope=${encodeURIComponent(opts.scope)}` : '';
      const res = await client().request<{ workflows: Record<string, unknown>[] }>('GET', `/v1/workflows${q}`);
      if (g().json) printJson(res);
      else printTable(res.workflows, ['workflow_id', 'name', 'version', 'scope', 'versions', 'initial_state']);
    });

  workflow
    .command('get <name>')
    .description('show a workflow (latest version, or --version) and its manifest')
    .option('--version <version>', 'a deployed version')
    .action(async (name: string, opts: { version?: string }) => {
      const q = opts.version ? `?version=${encodeURIComponent(opts.version)}` : '';
      const res = await client().request<Record<string, unknown>>('GET', path(name, q));
      if (g().json) printJson(res);
      else process.stdout.write(`# ${String(res.name)} ${String(res.version)} (${String(res.scope)}, ${String(res.workflow_id)})\n${String(res.manifest_yaml)}`);
    });

  workflow
    .command('versions <name>')
    .description('list the deployed versions of a workflow, highest first')
    .action(async (name: string) => {
      const res = await client().request<{ versions: Record<string, unknown>[] }>('GET', path(name, '/versions'));
      if (g().json) printJson(res);
      else printTable(res.versions, ['version', 'latest', 'workflow_id', 'deployed_by', 'updated_at']);
    });

  workflow
    .command('rm <name>')
    .description('delete a workflow (every version, or --version)')
    .option('--version <version>', 'only this version')
    .action(async (name: string, opts: { version?: string }) => {
      const q = opts.version ? `?version=${encodeURIComponent(opts.version)}` : '';
      const res = await client().request<{ name: string; versions: string[] }>('DELETE', path(name, q));
      if (g().json) printJson(res);
      else process.stdout.write(`deleted ${res.name} ${res.versions.join(', ')}\n`);
    });

  for (const verb of ['promote', 'demote'] as const) {
    workflow
      .command(`${verb} <name>`)
      .description(verb === 'promote' ? 'user → tenant, tenant → global (--to tenant|global, default global)' : 'global → tenant, tenant → user (--to tenant|user, default tenant)')
      .option('--to <scope>', 'the target scope')
      .option('--user <user>', 'the owning user (user scope)')
      .option('--version <version>', 'only this version')
      .action(async (name: string, opts: { to?: string; user?: string; version?: string }) => {
        const res = await client().request<{ name: string; target_scope: string; versions: string[] }>('POST', path(name, `/${verb}`), {
          ...(opts.to ? { target_scope: opts.to } : {}),
          ...(opts.user ? { user_id: opts.user } : {}),
          ...(opts.version ? { version: opts.version } : {}),
        });
        if (g().json) printJson(res);
        else process.stdout.write(`${verb}d ${res.name} ${res.versions.join(', ')} to ${res.target_scope} scope\n`);
      });
  }
}
