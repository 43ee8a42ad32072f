// Issue 14 (docs/SECURITY.md, git section): the host's git reads `.git/config` twice (the listing that decides the
// overrides, then the command). A tenant program writing the config between the two added a clean filter the
// listing never saw, and git ran it on the host. runGit now binds one frozen copy over `.git/config` for both
// (src/git/run.ts, src/git/sandbox.ts); the test rewrites the config in that window (runGit's afterListing hook)
// and checks the filter never ran: neither a marker on the host's /tmp nor one inside the repository.
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appendFile, mkdtemp, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runGit } from '../../src/git/run.ts';

const ENV = { PATH: '/usr/bin:/bin', HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

async function repoWithChange(t: import('ava').ExecutionContext): Promise<string> {
  const repo = await mkdtemp(path.join(os.tmpdir(), 'orch-git-freeze-'));
  t.teardown(() => rm(repo, { recursive: true, force: true }));
  const git = (...a: string[]) => execFileSync('git', ['-c', 'user.name=a', '-c', 'user.email=a@b', ...a], { cwd: repo, env: ENV });
  git('init', '-q', '-b', 'main');
  await writeFile(path.join(repo, 'a.txt'), 'one\n');
  git('add', 'a.txt');
  git('commit', '-qm', 'one');
  await writeFile(path.join(repo, '.gitattributes'), '* filter=evil\n');
  await writeFile(path.join(repo, 'a.txt'), 'two\n');
  return repo;
}

for (const sub of [['add', '--all'], ['status', '--porcelain']]) {
  test(`a clean filter written into .git/config after the listing does not run (git ${sub[0]})`, async (t) => {
    const repo = await repoWithChange(t);
    const hostMark = path.join(os.tmpdir(), `${randomBytes(8).toString('hex')}-PWNED`);
    const repoMark = path.join(repo, 'PWNED');
    t.teardown(() => rm(hostMark, { force: true }));
    let rewritten = false;
    await runGit(sub, {
      cwd: repo,
      protocols: ['https'],
      afterListing: async () => {
        await appendFile(path.join(repo, '.git', 'config'), `[filter "evil"]\n\tclean = "touch ${hostMark} ${repoMark}; cat"\n`);
        rewritten = true;
      },
    });
    t.true(rewritten);
    t.regex(await readFile(path.join(repo, '.git', 'config'), 'utf8'), /filter "evil"/);
    t.false(existsSync(hostMark), 'the filter ran on the host');
    t.false(existsSync(repoMark), 'the filter ran');
    // The attack is real: the same command by plain git, after the rewrite, runs the filter. Git runs a clean filter
    // only when it must read the file's content: when the size matches the index entry but the stat does not. A file
    // of another size is "modified" from its stat alone (status then runs no filter: this check failed 1 in 3 runs),
    // and a stat matching the index is trusted. So: the same size as the indexed 'one\n'/'two\n', another mtime.
    await writeFile(path.join(repo, 'a.txt'), 'six\n');
    const later = new Date(Date.now() + 5_000);
    await utimes(path.join(repo, 'a.txt'), later, later);
    execFileSync('git', sub, { cwd: repo, env: ENV, stdio: 'pipe' });
    t.true(existsSync(repoMark));
  });
}

test('a config that includes another file, or a .git/config symlink, is refused before the command runs', async (t) => {
  const repo = await repoWithChange(t);
  await appendFile(path.join(repo, '.git', 'config'), '[include]\n\tpath = extra\n');
  await writeFile(path.join(repo, '.git', 'extra'), '');
  await t.throwsAsync(runGit(['status'], { cwd: repo, protocols: ['https'] }), { message: /include\.path/ });
  const other = await repoWithChange(t);
  await rm(path.join(other, '.git', 'config'));
  await symlink('/etc/hostname', path.join(other, '.git', 'config'));
  await t.throwsAsync(runGit(['status'], { cwd: other, protocols: ['https'] }), { message: /symlink/ });
});

test('no bubblewrap, no git: the command fails clearly and is never run unsandboxed', async (t) => {
  const repo = await repoWithChange(t);
  await t.throwsAsync(runGit(['add', '--all'], { cwd: repo, protocols: ['https'], bwrap: '/nonexistent/bwrap' }), { message: /bubblewrap .* not installed/ });
  t.regex(execFileSync('git', ['status', '--porcelain'], { cwd: repo, env: ENV }).toString(), /^ M a\.txt/m);
});
