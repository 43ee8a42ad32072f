// cmd.run (seed 001): a command in the caller's sandbox workspace, dispatched through ctx.runCommand (the bootstrap
// inside the execution's container). Policy: the context's subcommand_allowlist (CommandNotAllowed,
// SubcommandNotAllowed). The node's builtin_dispatchers `cmd` entry sets the ceilings: max_output_bytes (default
// 512 KiB of combined stdout and stderr; more is tail-trimmed and flagged `truncated`) and timeout_ceiling_secs (default 300 s →
// ExecTimeoutCeilingExceeded). A non-zero exit code is a successful tool result. No shell is involved: a
// `command` with spaces and no `args` is split into words (quotes group words). `git` runs with the repository's
// command-valued config (fsmonitor, filters, hooks, aliases …) turned off: src/git/safe-config.ts.
import path from 'node:path';
import type { NodeConfig } from '../../config/types.ts';
import { listConfigArgs, parseConfigNames, safeGitArgs, UnsafeGitConfigError } from '../../git/safe-config.ts';
import { checkCommand } from '../policy.ts';
import type { ToolCallContext, ToolDefinition, ToolOutcome } from '../types.ts';
import { fail, ok, schema } from './util.ts';

type RunCommand = NonNullable<ToolCallContext['runCommand']>;

/** Where a command named by a subcommand_allowlist is looked up: system directories only, never the workspace or a
 * PATH the manifest set (`git` must be the system's git, not a `/workspace/bin/git` the agent made). */
export const ALLOWLIST_PATH = '/usr/local/bin:/usr/bin:/bin';
type CmdReq = Parameters<RunCommand>[0];

/**
 * `git …` with the repository's command-valued config turned off (src/git/safe-config.ts): the key names are listed
 * first, in the same sandbox, then the command runs with `-c` overrides before its subcommand. The allowlist was
 * checked on the caller's arguments, so the overrides cannot widen it.
 */
async function gitArgs(run: RunCommand, req: CmdReq): Promise<{ args: string[] } | { outcome: ToolOutcome }> {
  const listing = await run({ ...req, args: listConfigArgs(req.args) });
  if (listing.truncated) return { outcome: fail('CommandNotAllowed', 'the repository\'s git config is larger than the output ceiling; git was not run') };
  if (listing.exit_code !== 0) {
    return { outcome: ok({ ...listing, stderr: `[orch] git config --list failed, so git ${req.args[0] ?? ''} was not run: ${listing.stderr}` }) };
  }
  try {
    return { args: safeGitArgs(req.args, parseConfigNames(listing.stdout)) };
  } catch (err) {
    if (err instanceof UnsafeGitConfigError) return { outcome: fail('CommandNotAllowed', err.message) };
    throw err;
  }
}

export interface CmdCeilings {
  max_output_bytes: number;
  timeout_ceiling_secs: number;
}

export const DEFAULT_CMD_CEILINGS: CmdCeilings = { max_output_bytes: 524_288, timeout_ceiling_secs: 300 };

export function cmdCeilingsOf(config: Pick<NodeConfig, 'builtin_dispatchers'> | undefined): CmdCeilings {
  const cmd = config?.builtin_dispatchers?.find((d) => d.name === 'cmd')?.config ?? {};
  const num = (v: unknown, d: number): number => (typeof v === 'number' && v > 0 ? v : d);
  return {
    max_output_bytes: num(cmd.max_output_bytes, DEFAULT_CMD_CEILINGS.max_output_bytes),
    timeout_ceiling_secs: num(cmd.timeout_ceiling_secs, DEFAULT_CMD_CEILINGS.timeout_ceiling_secs),
  };
}

/** Splits `node main.js` into command and args when both came in `command` (no shell is involved). */
export function splitCommand(command: string, args: unknown): { command: string; args: string[] } {
  const given = Array.isArray(args) ? args.map(String) : [];
  if (given.length > 0 || !/\s/.test(command.trim())) return { command: command.trim(), args: given };
  const parts = command.trim().match(/"[^"]*"|'[^']*'|\S+/g) ?? [];
  const unq = parts.map((p) => p.replace(/^(["'])(.*)\1$/, '$2'));
  return { command: unq[0] ?? '', args: unq.slice(1) };
}

/** The cmd.run definition; `ceilings` are the node's (a call context may bring tighter ones in ctx.cmdCeilings). */
export function cmdTools(ceilings: CmdCeilings): ToolDefinition[] {
  return [
    {
      name: 'cmd.run',
      description: 'Run a command in the sandbox workspace (no shell). Returns stdout, stderr and exit_code.',
      inputSchema: schema(
        { command: { type: 'string', description: 'base command, e.g. node or git' }, args: { type: 'array', items: { type: 'string' } } },
        ['command'],
      ),
      required: ['command'],
      skipJudge: false,
      async handler(ctx, args) {
        if (typeof args.command !== 'string' || args.command.trim() === '') return fail('InvalidArguments', 'command must be a non-empty string for tool cmd.run');
        if (args.args !== undefined && args.args !== null && !Array.isArray(args.args)) return fail('InvalidArguments', 'args must be an array of strings for tool cmd.run');
        const { command, args: argv } = splitCommand(args.command, args.args);
        if (!command) return fail('InvalidArguments', 'command must be a non-empty string for tool cmd.run');
        // An allowlist names commands: `./git` or `/workspace/git` is another program that only shares the name.
        if (ctx.context.subcommandAllowlist && command.includes('/')) {
          return fail('CommandNotAllowed', `command ${command} is a path; with a subcommand_allowlist, commands are names (${Object.keys(ctx.context.subcommandAllowlist).join(', ')}) looked up on ${ALLOWLIST_PATH}`);
        }
        const denied = checkCommand(ctx.context, command, argv);
        if (denied) return { ok: false, error: denied };
        if (!ctx.runCommand) {
          if (ctx.noSandbox) return { ok: false, error: ctx.noSandbox };
          return fail('NoSandbox', `cmd.run needs a sandbox to run ${path.posix.basename(command)} in; this caller (${ctx.origin}) has none`);
        }
        const limits = ctx.cmdCeilings ?? ceilings;
        const cwd = ctx.workdir ?? ctx.mounts?.[0]?.sandboxPath ?? '/workspace';
        const req: CmdReq = {
          command, args: argv, cwd, timeout_secs: limits.timeout_ceiling_secs, max_output_bytes: limits.max_output_bytes,
          // The name resolves on the system directories only (spawn looks it up on the PATH it is given).
          ...(ctx.context.subcommandAllowlist ? { env: { PATH: ALLOWLIST_PATH } } : {}),
        };
        if (path.posix.basename(command) === 'git') {
          // No system-wide config (the host's /etc/gitconfig is not the tenant's, but nothing needs it either).
          req.env = { ...req.env, GIT_CONFIG_NOSYSTEM: '1' };
          const safe = await gitArgs(ctx.runCommand, req);
          if ('outcome' in safe) return safe.outcome;
          req.args = safe.args;
        }
        const result = await ctx.runCommand(req);
        if (result.timed_out === true || (result.timed_out === undefined && result.duration_ms >= limits.timeout_ceiling_secs * 1000 && result.exit_code !== 0)) {
          return fail('ExecTimeoutCeilingExceeded', `${command} ran longer than the node's timeout_ceiling_secs (${limits.timeout_ceiling_secs} s) and was stopped; stderr: ${result.stderr.slice(-2000)}`);
        }
        // Output over max_output_bytes is tail-trimmed by the bootstrap and flagged `truncated`: a result, not an
        // error (issue 3's acceptance; seed 001 names OutputSizeLimitExceeded, but the dispatch protocol's
        // `truncated` flag lets the model still see the tail, which is what it needs to fix a failing build).
        return ok(result);
      },
    },
  ];
}
