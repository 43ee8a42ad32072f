// Running the real `git` binary: execFile with an argument array (never a shell), a clean environment (no
// inherited secrets, no prompts, no system or global config), a protocol allowlist enforced by git itself
// (GIT_ALLOW_PROTOCOL also covers submodules and redirects), a timeout and an output cap. Credentials in a
// repository URL (https://user:token@host/…) are redacted from every message that leaves this module.
import { execFile } from 'node:child_process';
import { constants, existsSync } from 'node:fs';
import { lstat, mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Errors, OrchError } from '../errors/catalog.ts';
import { bwrapArgs } from './sandbox.ts';
import { listConfigArgs, parseConfigNames, safeGitArgs, UnsafeGitConfigError } from './safe-config.ts';

export const DEFAULT_GIT_BINARY = existsSync('/usr/bin/git') ? '/usr/bin/git' : 'git';
export const DEFAULT_BWRAP_BINARY = existsSync('/usr/bin/bwrap') ? '/usr/bin/bwrap' : 'bwrap';
/** A repository config larger than this is refused (git's own are a few hundred bytes). */
const MAX_CONFIG_BYTES = 1024 * 1024;
const MAX_BUFFER = 16 * 1024 * 1024;

export interface GitRunOptions {
  cwd: string;
  /** Protocols git may use, e.g. ['https'] or ['https', 'file']. */
  protocols: string[];
  timeoutMs?: number;
  binary?: string;
  /** Strings to redact from error messages (the URL's credentials). */
  secrets?: string[];
  /** The bubblewrap binary every git process runs under (default /usr/bin/bwrap, else looked up on PATH). */
  bwrap?: string;
  /** Host paths git may write besides o.cwd (a local upstream a push writes to, when the node allows those). */
  writable?: string[];
  /** Tests only: runs between the config listing and the command (to rewrite the config in that window). */
  afterListing?: () => Promise<void>;
}

export interface GitOutput {
  stdout: string;
  stderr: string;
}

/** A git command that exited non-zero: its redacted stderr is the message. */
export class GitCommandError extends Error {
  constructor(
    message: string,
    readonly exitCode: number | string | null,
    readonly stderr: string,
  ) {
    super(message);
  }
}

/** `https://user:secret@host/x` → `https://***@host/x`; anything else unchanged. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/i, '$1***@');
}

/** The userinfo of a URL (to redact from git's own messages), or nothing. */
export function urlSecrets(url: string): string[] {
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/@\s]*)@/i.exec(url);
  if (!m?.[1]) return [];
  const info = m[1];
  const out = [info];
  for (const part of info.split(':')) if (part.length >= 3) out.push(part, decodeURIComponent(part));
  return out;
}

export function redact(text: string, secrets: string[] = []): string {
  let t = text;
  for (const s of secrets.filter((x) => x.length > 0).sort((a, b) => b.length - a.length)) t = t.split(s).join('***');
  return t.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, '$1***@');
}

/**
 * Runs `git <args>` in o.cwd with the repository's command-valued config turned off (src/git/safe-config.ts): a
 * tenant can write the working tree of a binding, `.git/config` and `.git/hooks` included, at any moment.
 *
 * So the listing and the command must read the same config: `.git/config` is copied once to a private file, and
 * both git processes run under bubblewrap with that copy bound read-only over `.git/config` (src/git/sandbox.ts
 * has the rest of that view). A config the tenant rewrites after the copy is never read; one that includes other
 * files (which the tenant could rewrite) or reads a per-worktree config is refused. No bwrap, no git.
 */
export async function runGit(args: string[], o: GitRunOptions): Promise<GitOutput> {
  const sub = args.findIndex((a) => !a.startsWith('-'));
  const globals = sub === -1 ? args : args.slice(0, sub);
  // The frozen copy is o.cwd's config: a command pointed at another repository would read that one's, live.
  if (globals.some((a) => /^(-C|--git-dir|--work-tree)(=|$)/.test(a))) {
    throw new GitCommandError('runGit runs git in o.cwd only (-C, --git-dir and --work-tree are refused); git was not run', null, '');
  }
  const frozen = await freezeConfig(o.cwd);
  try {
    const listing = await execGit(listConfigArgs(args), o, frozen?.copy);
    const names = parseConfigNames(listing.stdout);
    const reads = names.find((n) => /^(include\.path|includeif\..+\.path|extensions\.worktreeconfig)$/i.test(n));
    if (reads) throw new GitCommandError(`the repository's git config has ${reads}, which makes git read a config file orch cannot freeze; git was not run`, null, '');
    await o.afterListing?.();
    return await execGit(safeGitArgs(args, names), o, frozen?.copy, args[0]);
  } catch (err) {
    if (err instanceof UnsafeGitConfigError) throw new GitCommandError(err.message, null, '');
    throw err;
  } finally {
    if (frozen) await rm(frozen.dir, { recursive: true, force: true });
  }
}

/**
 * A private copy of `<cwd>/.git/config` (null when there is no `.git` yet: a clone into an empty directory). A
 * `.git` that is not a directory (a gitfile or a symlink: git would read a config elsewhere) or a config that is
 * not a regular file is refused: the copy must be the config git would read.
 */
async function freezeConfig(cwd: string): Promise<{ dir: string; copy: string } | null> {
  const gitDir = path.join(cwd, '.git');
  const st = await lstat(gitDir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return null;
    throw e;
  });
  if (!st) return null;
  if (!st.isDirectory()) throw new GitCommandError(`${gitDir} is not a directory (a gitfile or a symlink); git was not run`, null, '');
  let text = '';
  try {
    const fh = await open(path.join(gitDir, 'config'), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      const fst = await fh.stat();
      if (!fst.isFile()) throw new GitCommandError('the repository\'s .git/config is not a regular file; git was not run', null, '');
      if (fst.size > MAX_CONFIG_BYTES) throw new GitCommandError('the repository\'s .git/config is larger than 1 MiB; git was not run', null, '');
      text = await fh.readFile('utf8');
    } finally {
      await fh.close();
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new GitCommandError('the repository\'s .git/config is a symlink; git was not run', null, '');
    if (code !== 'ENOENT') throw err;
    // No config: an empty one is bound, so none written later is read.
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'orch-gitcfg-'));
  const copy = path.join(dir, 'config');
  await writeFile(copy, text, { mode: 0o600 });
  return { dir, copy };
}

function execGit(args: string[], o: GitRunOptions, config: string | undefined, subcommand = args[0]): Promise<GitOutput> {
  const env: Record<string, string> = {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    // Not the work tree: nothing a cloned repository contains may be read as configuration.
    HOME: '/nonexistent',
    XDG_CONFIG_HOME: '/nonexistent',
    LANG: 'C',
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ALLOW_PROTOCOL: o.protocols.join(':'),
  };
  return new Promise((resolve, reject) => {
    const bwrap = o.bwrap ?? DEFAULT_BWRAP_BINARY;
    execFile(
      bwrap,
      bwrapArgs({ cwd: o.cwd, config, writable: o.writable ?? [], env, command: [o.binary ?? DEFAULT_GIT_BINARY, ...args] }),
      // bwrap itself gets PATH only; git's environment is set inside (--clearenv, --setenv).
      { cwd: '/', env: { PATH: env.PATH! }, timeout: o.timeoutMs ?? 120_000, maxBuffer: MAX_BUFFER, killSignal: 'SIGKILL', windowsHide: true },
      (err, stdout, stderr) => {
        if (!err) return resolve({ stdout, stderr });
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string | null };
        if (e.code === 'ENOENT') return reject(new OrchError(Errors.UNAVAILABLE, `bubblewrap (${bwrap}) is not installed on this node: git runs only inside it; git was not run`));
        if (/^bwrap: /m.test(String(stderr)) && (e.code as unknown) === 1 && !/^(fatal|error): /m.test(String(stderr))) {
          return reject(new OrchError(Errors.UNAVAILABLE, `bubblewrap could not make the sandbox git runs in; git was not run: ${redact(String(stderr).trim(), o.secrets).slice(-500)}`));
        }
        const text = redact(String(stderr || e.message).trim(), o.secrets);
        const why = e.killed ? `git ${subcommand} timed out` : `git ${subcommand} failed`;
        reject(new GitCommandError(`${why}: ${text.slice(-2000)}`, e.code ?? null, text));
      },
    );
  });
}
