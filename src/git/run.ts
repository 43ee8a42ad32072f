// Running the real `git` binary: execFile with an argument array (never a shell), a clean environment (no
// inherited secrets, no prompts, no system or global config), a protocol allowlist enforced by git itself
// (GIT_ALLOW_PROTOCOL also covers submodules and redirects), a timeout and an output cap. Credentials in a
// repository URL (https://user:token@host/…) are redacted from every message that leaves this module.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Errors, OrchError } from '../errors/catalog.ts';
import { listConfigArgs, parseConfigNames, safeGitArgs, UnsafeGitConfigError } from './safe-config.ts';

export const DEFAULT_GIT_BINARY = existsSync('/usr/bin/git') ? '/usr/bin/git' : 'git';
const MAX_BUFFER = 16 * 1024 * 1024;

export interface GitRunOptions {
  cwd: string;
  /** Protocols git may use, e.g. ['https'] or ['https', 'file']. */
  protocols: string[];
  timeoutMs?: number;
  binary?: string;
  /** Strings to redact from error messages (the URL's credentials). */
  secrets?: string[];
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
 * tenant can write the working tree of a binding, `.git/config` and `.git/hooks` included.
 */
export async function runGit(args: string[], o: GitRunOptions): Promise<GitOutput> {
  const listing = await execGit(listConfigArgs(args), o);
  try {
    return await execGit(safeGitArgs(args, parseConfigNames(listing.stdout)), o, args[0]);
  } catch (err) {
    if (err instanceof UnsafeGitConfigError) throw new GitCommandError(err.message, null, '');
    throw err;
  }
}

function execGit(args: string[], o: GitRunOptions, subcommand = args[0]): Promise<GitOutput> {
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
    execFile(
      o.binary ?? DEFAULT_GIT_BINARY,
      args,
      { cwd: o.cwd, env, timeout: o.timeoutMs ?? 120_000, maxBuffer: MAX_BUFFER, killSignal: 'SIGKILL', windowsHide: true },
      (err, stdout, stderr) => {
        if (!err) return resolve({ stdout, stderr });
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string | null };
        if (e.code === 'ENOENT') return reject(new OrchError(Errors.UNAVAILABLE, 'the git binary is not installed on this node'));
        const text = redact(String(stderr || e.message).trim(), o.secrets);
        const why = e.killed ? `git ${subcommand} timed out` : `git ${subcommand} failed`;
        reject(new GitCommandError(`${why}: ${text.slice(-2000)}`, e.code ?? null, text));
      },
    );
  });
}
