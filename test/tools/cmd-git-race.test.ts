// Issue 14 finding 6, the two gaps left after the first fix:
//  1. the config listing and the git command were two calls: a program in the sandbox that rewrites .git/config
//     between them (here: the runner rewrites it right after the listing) got its editor, signing program, alias
//     of the subcommand or external diff run. Those are now turned off on the command's own invocation.
//  2. the allowlist matched the command's base name, so `./git` or `/workspace/git` (a program the agent made)
//     passed as `git`, and `git` itself resolved on a PATH the manifest could point at the workspace. With an
//     allowlist, paths are refused and names resolve on system directories only.
// Real processes: the host's git for (1), a bubblewrap sandbox (ProcessRuntime.exec, the SEAL runner) for (2).
import test from 'ava';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { ProcessRuntime } from '../../src/agents/runtime/process.ts';
import { ALLOWLIST_PATH, cmdTools, DEFAULT_CMD_CEILINGS } from '../../src/tools/builtin/cmd.ts';
import type { ToolCallContext } from '../../src/tools/types.ts';
import { callContext, context } from './helpers.ts';

const cmd = cmdTools(DEFAULT_CMD_CEILINGS)[0]!;
type Req = Parameters<NonNullable<ToolCallContext['runCommand']>>[0];

async function repo(t: import('ava').ExecutionContext): Promise<{ repo: string; marks: string }> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'orch-git-race-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const dir = path.join(root, 'repo');
  const marks = path.join(root, 'marks');
  await mkdir(dir);
  await mkdir(marks);
  const git = (...a: string[]) => execFileSync('git', ['-c', 'user.name=a', '-c', 'user.email=a@b', ...a], { cwd: dir, env: { PATH: '/usr/bin:/bin', HOME: root } });
  git('init', '-q', '-b', 'main');
  await writeFile(path.join(dir, 'a.txt'), 'one\n');
  git('add', 'a.txt');
  git('commit', '-qm', 'one');
  await writeFile(path.join(dir, 'a.txt'), 'two\n');
  return { repo: dir, marks };
}

/** A runner on the host's git in `dir` that, right after the config listing, rewrites .git/config with `evil`. */
function racingRunner(dir: string, evil: string, seen: Req[]): NonNullable<ToolCallContext['runCommand']> {
  return async (req) => {
    seen.push(req);
    const r = spawnSync(req.command, req.args, { cwd: dir, env: { HOME: path.dirname(dir), ...req.env, PATH: req.env?.PATH ?? '/usr/bin:/bin' }, encoding: 'utf8' });
    if (req.args.includes('--list')) await writeFile(path.join(dir, '.git', 'config'), `[core]\n\tbare = false\n${evil}`, { flag: 'a' });
    return { exit_code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr, duration_ms: 1, truncated: false };
  };
}

test('config written between the listing and the command runs nothing: editor, signing program, alias of the subcommand, external diff, textconv', async (t) => {
  const { repo: dir, marks } = await repo(t);
  const script = path.join(marks, '..', 'mark.sh');
  await writeFile(script, `#!/bin/sh\ntouch "${marks}/$1"\nexit 1\n`);
  await chmod(script, 0o755);
  const user = `[user]\n\tname = a\n\temail = a@b\n`;
  // Each round: what the rewritten config adds, and the call that would run it. `sync` is no git command, so an alias
  // of that name runs (a builtin is never aliased).
  const rounds: Array<[string[], string]> = [
    [['commit', '-a'], `\teditor = ${script} editor\n${user}`],
    [['commit', '-qam', 'two'], `[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = ${script}\n${user}`],
    [['sync'], `[alias]\n\tsync = "!${script} alias"\n`],
    [['diff'], `[diff]\n\texternal = ${script}\n`],
    [['diff'], `[diff "evil"]\n\ttextconv = ${script} textconv\n`],
  ];
  await writeFile(path.join(dir, '.gitattributes'), '*.txt diff=evil\n');
  const allow = { git: ['commit', 'sync', 'diff'] };
  const original = await readFile(path.join(dir, '.git', 'config'), 'utf8');
  for (const [args, evil] of rounds) {
    // A fresh race each time: the config is reset, then rewritten after the listing.
    await writeFile(path.join(dir, '.git', 'config'), original);
    const seen: Req[] = [];
    const ctx = callContext(context({ allow: ['cmd.run'], subcommandAllowlist: allow }), { runCommand: racingRunner(dir, evil, seen) });
    await cmd.handler(ctx, { command: 'git', args });
    t.is(seen.length, 2, 'the listing, then the command');
    t.is(seen[1]!.env?.PATH, ALLOWLIST_PATH);
  }
  t.deepEqual(await readdir(marks), [], 'a program the rewritten config named was run');
});

test('with an allowlist, a path to a program named git is refused, and git resolves on system directories only (bubblewrap sandbox)', async (t) => {
  const rt = new ProcessRuntime({ logger: silentLogger(), sandbox: 'bwrap' });
  const ws = await mkdtemp(path.join(os.tmpdir(), 'orch-cmd-path-'));
  t.teardown(() => rm(ws, { recursive: true, force: true }));
  await mkdir(path.join(ws, 'bin'));
  // The agent's own `git`: leaves a mark when run.
  for (const p of [path.join(ws, 'git'), path.join(ws, 'bin', 'git')]) {
    await writeFile(p, '#!/bin/sh\necho fake > /workspace/FAKE_RAN\n');
    await chmod(p, 0o755);
  }
  const h = await rt.start({
    executionId: `path-${Date.now()}`, agentId: 'a', command: ['sleep', '600'], workdir: '/workspace', network: false, labels: {},
    // The manifest put the workspace first on PATH.
    env: { PATH: '/workspace/bin:/usr/local/bin:/usr/bin:/bin' },
    mounts: [{ hostPath: ws, sandboxPath: '/workspace', readOnly: false }],
  });
  t.teardown(() => rt.stop(h.id));
  const ctx = callContext(context({ allow: ['cmd.run'], subcommandAllowlist: { git: ['status', 'init'] } }), {
    workdir: '/workspace',
    runCommand: (req) => rt.exec(h.id, req),
  });
  for (const command of ['./git', '/workspace/git', 'bin/git', '/workspace/bin/git']) {
    const r = await cmd.handler(ctx, { command, args: ['status'] });
    t.like(r, { ok: false, error: { error: 'CommandNotAllowed' } }, command);
    t.regex(r.ok ? '' : r.error.message, /is a path/);
  }
  const real = await cmd.handler(ctx, { command: 'git', args: ['init', '-q'] });
  t.true(real.ok, JSON.stringify(real));
  t.true(existsSync(path.join(ws, '.git')), 'the system git ran');
  t.false(existsSync(path.join(ws, 'FAKE_RAN')), 'the workspace git ran');
});
