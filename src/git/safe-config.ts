// Git invocations orch makes for tools run in repositories a tenant or an agent can write (a binding's volume, the
// sandbox's /workspace). Git reads `.git/config` (and what it includes) on every call, and several keys there are
// commands git runs: `core.fsmonitor` on `git status`, `filter.<x>.clean` for files whose attributes name the
// filter, `diff.<x>.textconv`, hooks under `.git/hooks` … So `cmd.run git status` allowed by a
// subcommand_allowlist would run whatever an agent wrote into the config with fs.write (issue 14, finding 6).
//
// Every such invocation therefore
//   1. lists the names of the config keys git will see (`git config --list --name-only -z` with the caller's `-C`,
//      `-c`, `--git-dir` …: reading the config runs nothing; includes are followed, so included files are covered);
//   2. runs the real command with `--no-pager` and `-c <key>=<neutral value>` for every key in that list that names
//      a command, plus fixed overrides for what needs no key (hooks, the fsmonitor, the `ext::` and `git://`
//      transports). `-c` is git's command-line config: it beats every file, and an empty value turns a driver,
//      helper or alias off (an empty credential.helper resets the helper list); see COMMAND_KEYS for the exceptions.
// A key whose name contains `=` cannot be given to `-c` (git splits at the first `=`), so such a config is refused.
// The listing and the command read the same file unless something writes it between the two calls; the loop runs
// one tool call at a time, and the GitService holds the binding's lock.

/** Overrides applied to every invocation, whatever the config holds. */
export const FIXED_GIT_OVERRIDES: ReadonlyArray<readonly [string, string]> = [
  ['core.fsmonitor', ''],
  ['core.hooksPath', '/dev/null'],
  // ext:: runs a shell command; git:// honours core.gitProxy, whose first match wins and cannot be overridden.
  ['protocol.ext.allow', 'never'],
  ['protocol.git.allow', 'never'],
];

const LIST_CONFIG_ARGS: readonly string[] = ['config', '--list', '--name-only', '-z'];

/** Keys that hold a command (or a program git runs), matched on the lowercase name git prints; value to set. */
const COMMAND_KEYS: ReadonlyArray<readonly [RegExp, string]> = [
  [/^core\.(fsmonitor|sshcommand|pager|askpass|alternaterefscommand)$/, ''],
  // `:` is the shell's no-op: an edit that changes nothing (an empty editor would fall back to vi).
  [/^(core|sequence)\.editor$/, ':'],
  // Git runs an empty external diff or textconv as a command (`cannot run`): textconv becomes the identity, an
  // external diff one that fails loudly (`external diff died`) rather than printing nothing.
  [/^diff\..+\.textconv$/, 'cat'],
  [/^diff\.(external|.+\.command)$/, 'false'],
  [/^filter\..+\.(clean|smudge|process)$/, ''],
  [/^merge\..+\.driver$/, ''],
  [/^(mergetool|difftool|guitool|browser|man)\..+\.(cmd|path)$/, ''],
  [/^(merge|diff)\.(tool|guitool)$/, ''],
  [/^web\.browser$/, ''],
  [/^credential\.(.+\.)?helper$/, ''],
  [/^alias\..+$/, ''],
  [/^pager\..+$/, 'false'],
  [/^submodule\..+\.update$/, 'none'],
  [/^remote\..+\.(uploadpack|receivepack|vcs)$/, ''],
  [/^gpg\.(.+\.)?program$/, ''],
  [/^gpg\.ssh\.defaultkeycommand$/, ''],
  [/^sendemail\.(.+\.)?(smtpserver|tocmd|cccmd|headercmd|sendmailcmd)$/, ''],
  [/^instaweb\..+$/, ''],
  // A protocol allowed by the repository (`protocol.evil.allow = always`) would let a remote helper run.
  [/^protocol\.(?!(http|https|ssh|file)\.allow$).+\.allow$/, 'never'],
];

export class UnsafeGitConfigError extends Error {}

/** The `-c` overrides for a config whose key names are `names` (as `git config --list --name-only -z` prints). */
export function gitOverrides(names: Iterable<string>): [string, string][] {
  const out = new Map<string, string>(FIXED_GIT_OVERRIDES.map(([k, v]) => [k, v]));
  for (const name of names) {
    const lower = name.toLowerCase();
    const hit = COMMAND_KEYS.find(([re]) => re.test(lower));
    if (!hit) continue;
    if (name.includes('=')) throw new UnsafeGitConfigError(`the repository's git config has key ${JSON.stringify(name)}, which names a command and cannot be overridden (its name contains "="); git was not run`);
    out.set(name, hit[1]);
  }
  return [...out];
}

/** The key names in the NUL-separated output of LIST_CONFIG_ARGS. */
export function parseConfigNames(stdout: string): string[] {
  return stdout.split('\0').filter((n) => n.length > 0);
}

/** Git's global options that take their value as the next argument. */
const TAKES_VALUE = new Set(['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--config-env', '--attr-source']);
/** The global options that decide which repository and which config git reads: the listing must see the same. */
const LOCATES = /^(-C|-c|--git-dir|--work-tree|--namespace|--config-env|--bare)(=|$)/;

/** The global options in front of the subcommand (`-C dir`, `-c k=v`, `--git-dir=…`) and the rest. */
function splitGlobal(args: readonly string[]): { globals: string[][]; rest: string[] } {
  const globals: string[][] = [];
  let i = 0;
  while (i < args.length && args[i]!.startsWith('-')) {
    const n = TAKES_VALUE.has(args[i]!) ? 2 : 1;
    globals.push(args.slice(i, i + n));
    i += n;
  }
  return { globals, rest: args.slice(i) };
}

/**
 * The listing for `git <args>`: the caller's options that locate the repository and its config (`-C`, `-c`,
 * `--git-dir` …), then `config --list`. Other global options (`--help`, `--version` …) are left out: they could run
 * something before any override applies.
 */
export function listConfigArgs(args: readonly string[]): string[] {
  const locating = splitGlobal(args).globals.filter((g) => LOCATES.test(g[0]!));
  return [...locating.flat(), ...LIST_CONFIG_ARGS];
}

/**
 * `git <args>` with the pager off and the overrides after the caller's own global options, just before the
 * subcommand: a later `-c` wins, so a caller's `-c core.fsmonitor=…` (where an allowlist lets one through) is
 * overridden too.
 */
export function safeGitArgs(args: readonly string[], names: Iterable<string>): string[] {
  const { globals, rest } = splitGlobal(args);
  const ours: string[] = ['--no-pager'];
  for (const [k, v] of gitOverrides(names)) ours.push('-c', `${k}=${v}`);
  return [...globals.flat(), ...ours, ...rest];
}
