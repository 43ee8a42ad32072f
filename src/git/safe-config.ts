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
//
// The listing and the command are two processes: a program in the sandbox could rewrite the config between them.
// So everything that can be neutralised without knowing the config is, on the command's own invocation: every
// fixed-named command key (FIXED_GIT_OVERRIDES: fsmonitor, hooks, ssh command, editors, askpass, credential
// helpers, signing programs, tools, browsers, the pager), an alias of the subcommand itself, and for the diff
// family `--no-ext-diff --no-textconv` (diff.external, diff.<driver>.command, textconv). What remains tied to the
// listing are drivers named by the repository's own attributes (`filter.<x>.clean/smudge/process`,
// `merge.<x>.driver`) and `remote.<x>.uploadpack/receivepack`: git (2.39) has no option that turns those off for
// any name; docs/SECURITY.md says so. The host's git (src/git/run.ts) closes that window another way: its listing
// and command both read one frozen copy of the config, bound read-only under bubblewrap.

/** Overrides applied to every invocation, whatever the config holds. */
export const FIXED_GIT_OVERRIDES: ReadonlyArray<readonly [string, string]> = [
  ['core.fsmonitor', ''],
  ['core.hooksPath', '/dev/null'],
  ['core.sshCommand', ''],
  ['core.askPass', ''],
  ['core.alternateRefsCommand', ''],
  ['core.pager', 'cat'],
  // `:` is the shell's no-op: an edit that changes nothing (an empty editor would fall back to vi).
  ['core.editor', ':'],
  ['sequence.editor', ':'],
  // An empty value resets the list of helpers gathered so far, URL-specific ones included.
  ['credential.helper', ''],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
  ['push.gpgSign', 'false'],
  ['log.showSignature', 'false'],
  ['gpg.program', 'gpg'],
  ['gpg.openpgp.program', 'gpg'],
  ['gpg.x509.program', 'gpgsm'],
  ['gpg.ssh.program', 'ssh-keygen'],
  ['gpg.ssh.defaultKeyCommand', ''],
  ['merge.tool', ''],
  ['merge.guitool', ''],
  ['diff.tool', ''],
  ['diff.guitool', ''],
  ['web.browser', ''],
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
  const overrides = gitOverrides(names);
  const sub = rest[0];
  // An alias of the subcommand itself (a builtin is never aliased; any other name could be), set on this very
  // invocation: a config rewritten after the listing cannot add one.
  if (sub !== undefined && /^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(sub)) overrides.push([`alias.${sub}`, '']);
  for (const [k, v] of overrides) ours.push('-c', `${k}=${v}`);
  if (sub === undefined || !DIFF_FAMILY.has(sub)) return [...globals.flat(), ...ours, ...rest];
  // External diff programs and textconv off on this invocation, whatever the config says by the time git reads it.
  const given = rest.slice(1);
  const reopens = given.find((a) => a === '--ext-diff' || a === '--textconv');
  if (reopens) throw new UnsafeGitConfigError(`git ${sub} ${reopens} would run a program the repository's config names; git was not run`);
  return [...globals.flat(), ...ours, sub, '--no-ext-diff', '--no-textconv', ...given];
}

/** Subcommands that take diff options and may run an external diff or a textconv filter. */
const DIFF_FAMILY = new Set(['diff', 'log', 'show', 'whatchanged', 'format-patch', 'diff-tree', 'diff-files', 'diff-index']);
