// The host's git (src/git/run.ts, used by the GitService for orch.git.* in a binding's volume, which tenants can
// write) runs none of the commands a repository's config or hooks name: fsmonitor, clean filter, textconv, hooks,
// an alias. The same repository run by plain git shows each attack works, so the test can tell.
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gitOverrides, listConfigArgs, safeGitArgs } from '../../src/git/safe-config.ts';
import { GitCommandError, runGit } from '../../src/git/run.ts';

const ENV = { PATH: '/usr/bin:/bin', HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

/** A committed repository whose config, attributes and hooks each write a marker file into `marks` when run. */
async function hostileRepo(t: import('ava').ExecutionContext): Promise<{ repo: string; marks: string }> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'orch-git-safe-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const repo = path.join(root, 'repo');
  const marks = path.join(root, 'marks');
  execFileSync('mkdir', ['-p', repo, marks]);
  const git = (...a: string[]) => execFileSync('git', ['-c', 'user.name=a', '-c', 'user.email=a@b', ...a], { cwd: repo, env: ENV });
  git('init', '-q', '-b', 'main');
  await writeFile(path.join(repo, 'a.txt'), 'one\n');
  git('add', 'a.txt');
  git('commit', '-qm', 'one');
  const mark = (name: string) => `touch ${marks}/${name}`;
  await writeFile(
    path.join(repo, '.git', 'config'),
    `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "${mark('fsmonitor')}"\n` +
      `[filter "evil"]\n\tclean = "${mark('filter')}; cat"\n` +
      `[diff "evil"]\n\ttextconv = "${mark('textconv')}; cat"\n` +
      `[alias]\n\tshow-all = "!${mark('alias')}"\n`,
  );
  await writeFile(path.join(repo, '.gitattributes'), '*.txt filter=evil diff=evil\n');
  await writeFile(path.join(repo, '.git', 'hooks', 'pre-commit'), `#!/bin/sh\n${mark('hook')}\n`);
  await chmod(path.join(repo, '.git', 'hooks', 'pre-commit'), 0o755);
  await writeFile(path.join(repo, 'a.txt'), 'two\n');
  return { repo, marks };
}

test('plain git runs every command the hostile repository names (the attack is real)', async (t) => {
  const { repo, marks } = await hostileRepo(t);
  const git = (...a: string[]) => execFileSync('git', ['-c', 'user.name=a', '-c', 'user.email=a@b', ...a], { cwd: repo, env: ENV, stdio: 'pipe' });
  git('status');
  git('diff');
  git('commit', '-qam', 'two');
  try {
    git('show-all');
  } catch {
    /* the alias's exit code does not matter */
  }
  t.deepEqual((await readdir(marks)).sort(), ['alias', 'filter', 'fsmonitor', 'hook', 'textconv']);
});

test('runGit: status, diff, commit and an alias run none of them, and still work', async (t) => {
  const { repo, marks } = await hostileRepo(t);
  const o = { cwd: repo, protocols: ['https'] };
  t.regex((await runGit(['status', '--porcelain'], o)).stdout, /M a\.txt/);
  t.regex((await runGit(['diff'], o)).stdout, /\+two/);
  await runGit(['-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '-qam', 'two'], o);
  t.regex((await runGit(['log', '--oneline'], o)).stdout, /two/);
  await t.throwsAsync(runGit(['show-all'], o), { instanceOf: GitCommandError });
  t.deepEqual(await readdir(marks), []);
});

test('runGit: the caller\'s -c is seen by the listing and the overrides come after it; -C is refused', async (t) => {
  const { repo, marks } = await hostileRepo(t);
  t.regex((await runGit(['-c', `core.fsmonitor=touch ${marks}/cli`, 'status', '--porcelain'], { cwd: repo, protocols: ['https'] })).stdout, /M a\.txt/);
  t.deepEqual(await readdir(marks), []);
  // The frozen config is o.cwd's (src/git/run.ts): another repository's would be read live.
  await t.throwsAsync(runGit(['-C', repo, 'status'], { cwd: path.dirname(repo), protocols: ['https'] }), { message: /-C, --git-dir and --work-tree are refused/ });
});

test('listConfigArgs keeps only the options that locate the repository and its config; safeGitArgs puts ours last', (t) => {
  t.deepEqual(listConfigArgs(['--help', '-C', '/r', '--git-dir=/r/.git', '-c', 'a.b=c', '--no-replace-objects', 'status', '-C', 'x']), [
    '-C', '/r', '--git-dir=/r/.git', '-c', 'a.b=c', 'config', '--list', '--name-only', '-z',
  ]);
  const args = safeGitArgs(['-c', 'core.fsmonitor=evil', 'status'], []);
  t.deepEqual(args.slice(0, 3), ['-c', 'core.fsmonitor=evil', '--no-pager']);
  t.true(args.indexOf('core.fsmonitor=') > args.indexOf('core.fsmonitor=evil'));
  t.is(args.at(-1), 'status');
});

test('a command-valued key whose name git -c cannot express is refused before git runs', async (t) => {
  const { repo, marks } = await hostileRepo(t);
  await writeFile(path.join(repo, '.git', 'config'), `[core]\n\tbare = false\n[filter "a=b"]\n\tclean = "touch ${marks}/eq; cat"\n`);
  await writeFile(path.join(repo, '.gitattributes'), '*.txt filter=a=b\n');
  await t.throwsAsync(runGit(['status'], { cwd: repo, protocols: ['https'] }), { message: /cannot be overridden/ });
  t.false(existsSync(path.join(marks, 'eq')));
});

test('gitOverrides: fixed overrides always; command keys by name, other keys untouched', (t) => {
  const o = new Map(gitOverrides(['user.name', 'core.fsmonitor', 'filter.Foo.clean', 'credential.https://x.helper', 'pager.log', 'protocol.https.allow', 'protocol.evil.allow', 'remote.origin.vcs', 'color.pager']));
  t.is(o.get('core.hooksPath'), '/dev/null');
  t.is(o.get('protocol.ext.allow'), 'never');
  t.is(o.get('core.fsmonitor'), '');
  t.is(o.get('filter.Foo.clean'), '');
  t.is(o.get('credential.https://x.helper'), '');
  t.is(o.get('pager.log'), 'false');
  t.is(o.get('protocol.evil.allow'), 'never');
  t.is(o.get('remote.origin.vcs'), '');
  t.false(o.has('protocol.https.allow'));
  t.false(o.has('user.name'));
  t.false(o.has('color.pager'));
});
