// orch.git.* through the node's real tool catalog, with the real git binary, a real PGlite database and the real
// VolumeService. The upstream is a bare repository made with `git init --bare` in a temp dir, cloned by path and by
// file:// URL (the node config allows local repositories here). Clone, status, diff, commit, push into the bare
// repo, refresh pulling a new upstream commit, soft delete cascading to the volume, tenant isolation, URL policy and
// credential redaction.
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import { openDb } from '../../src/storage/open.ts';
import type { Db } from '../../src/storage/db.ts';
import { createToolCatalog, type NodeToolCatalog } from '../../src/tools/catalog.ts';
import type { ToolOutcome } from '../../src/tools/types.ts';
import { VolumeService } from '../../src/volumes/service.ts';
import { callContext, context, nodeConfig, principal } from './helpers.ts';

let dir: string;
let db: Db;
let volumes: VolumeService;
let catalog: NodeToolCatalog;
let strict: NodeToolCatalog;
let bare: string;

const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-c', 'user.name=Up Stream', '-c', 'user.email=up@example.invalid', ...args], { cwd, encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin', HOME: cwd, GIT_CONFIG_NOSYSTEM: '1' } });

test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'orch-git-'));
  db = await openDb({ dataDir: path.join(dir, 'data') }, silentLogger());
  volumes = new VolumeService({ db, dataDir: path.join(dir, 'data'), nodeId: 'node-t1', logger: silentLogger() });
  const config = nodeConfig({ dataDir: path.join(dir, 'data'), builtin_dispatchers: [{ name: 'git', config: { allow_local_repos: true } }] });
  catalog = createToolCatalog({ config, logger: silentLogger(), db, volumes });
  strict = createToolCatalog({ config: nodeConfig({ dataDir: path.join(dir, 'data') }), logger: silentLogger(), db, volumes });
  // The upstream: a bare repository with one commit on main.
  bare = path.join(dir, 'upstream.git');
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
  const seed = path.join(dir, 'seed');
  execFileSync('git', ['clone', '-q', bare, seed], { stdio: 'pipe' });
  await writeFile(path.join(seed, 'README.md'), 'hello\n');
  git(seed, 'add', 'README.md');
  git(seed, 'commit', '-q', '-m', 'first');
  git(seed, 'push', '-q', 'origin', 'HEAD:refs/heads/main');
});
test.after.always(async () => {
  await db?.close();
  await rm(dir, { recursive: true, force: true });
});

const acme = callContext(context(), { origin: 'mcp' });
const other = callContext(context(), { origin: 'mcp', principal: principal([], 'globex', 'bob'), tenantId: 'globex' });

async function call<T = Record<string, unknown>>(name: string, args: Record<string, unknown>, ctx = acme, cat = catalog): Promise<T> {
  const r: ToolOutcome = await cat.call(ctx, name, args);
  if (!r.ok) throw new Error(`${name}: ${r.error.error}: ${r.error.message}`);
  return r.result as T;
}

async function failure(name: string, args: Record<string, unknown>, ctx = acme, cat = catalog): Promise<{ error: string; message: string }> {
  const r = await cat.call(ctx, name, args);
  if (r.ok) throw new Error(`${name} succeeded: ${JSON.stringify(r.result)}`);
  return r.error;
}

interface Binding {
  binding_id: string;
  status: string;
  volume_id: string;
  head_commit: string;
  repo_url: string;
}

test.serial('the catalog registers the eight orch.git tools', (t) => {
  const names = catalog.definitions().map((d) => d.name).filter((n) => n.startsWith('orch.git.'));
  t.deepEqual(names, ['orch.git.clone', 'orch.git.commit', 'orch.git.delete', 'orch.git.diff', 'orch.git.list', 'orch.git.push', 'orch.git.refresh', 'orch.git.status']);
  t.true(catalog.skipJudge('orch.git.status'));
  t.false(catalog.skipJudge('orch.git.push'));
});

test.serial('clone → status → diff → commit → push lands in the bare repo → refresh pulls an upstream commit → delete', async (t) => {
  const b = await call<Binding>('orch.git.clone', { repo_url: bare, label: 'upstream' });
  t.is(b.status, 'ready');
  t.regex(b.head_commit, /^[0-9a-f]{40}$/);
  // The binding owns a volume made through the VolumeService.
  const vol = await volumes.get('acme', b.volume_id);
  t.is(vol.owner_kind, 'git_binding');
  t.is(vol.owner_ref, b.binding_id);
  t.true(vol.used_bytes > 0, 'the clone is counted against the volume');
  const work = await volumes.hostPath('acme', b.volume_id);
  t.is(await readFile(path.join(work, 'README.md'), 'utf8'), 'hello\n');

  const clean = await call<{ clean: boolean; branch: string }>('orch.git.status', { binding_id: b.binding_id });
  t.true(clean.clean);
  t.is(clean.branch, 'main');

  await writeFile(path.join(work, 'README.md'), 'hello\nworld\n');
  await writeFile(path.join(work, 'new.txt'), 'new file\n');
  const st = await call<{ clean: boolean; changes: { path: string; index: string; worktree: string }[] }>('orch.git.status', { binding_id: b.binding_id });
  t.false(st.clean);
  t.deepEqual(st.changes.map((c) => `${c.index}${c.worktree} ${c.path}`).sort(), [' M README.md', '?? new.txt']);
  const d = await call<{ diff: string }>('orch.git.diff', { binding_id: b.binding_id });
  t.regex(d.diff, /^\+world$/m);
  t.regex(d.diff, /README\.md/);

  const c = await call<{ commit: string }>('orch.git.commit', { binding_id: b.binding_id, message: 'add world' });
  t.regex(c.commit, /^[0-9a-f]{40}$/);
  t.true((await call<{ clean: boolean }>('orch.git.status', { binding_id: b.binding_id })).clean);
  t.is((await failure('orch.git.commit', { binding_id: b.binding_id, message: 'again' })).error, 'NothingToCommit');
  const staged = await call<{ diff: string }>('orch.git.diff', { binding_id: b.binding_id, staged: true });
  t.is(staged.diff, '');

  const p = await call<{ branch: string; commit: string }>('orch.git.push', { binding_id: b.binding_id });
  t.is(p.branch, 'main');
  t.is(execFileSync('git', ['--git-dir', bare, 'log', '-1', '--format=%s %an', 'main'], { encoding: 'utf8' }).trim(), 'add world alice');
  t.is(execFileSync('git', ['--git-dir', bare, 'rev-parse', 'main'], { encoding: 'utf8' }).trim(), c.commit);
  t.regex(execFileSync('git', ['--git-dir', bare, 'show', 'main:new.txt'], { encoding: 'utf8' }), /new file/);

  // Someone else pushes upstream; refresh brings it in.
  const elsewhere = path.join(dir, 'elsewhere');
  execFileSync('git', ['clone', '-q', bare, elsewhere]);
  await writeFile(path.join(elsewhere, 'upstream.txt'), 'from upstream\n');
  git(elsewhere, 'add', '.');
  git(elsewhere, 'commit', '-q', '-m', 'upstream change');
  git(elsewhere, 'push', '-q', 'origin', 'HEAD:refs/heads/main');
  const upstreamHead = git(elsewhere, 'rev-parse', 'HEAD').trim();
  const r = await call<{ updated: boolean; head_commit: string; previous_commit: string }>('orch.git.refresh', { binding_id: b.binding_id });
  t.true(r.updated);
  t.is(r.previous_commit, c.commit);
  t.is(r.head_commit, upstreamHead);
  t.is(await readFile(path.join(work, 'upstream.txt'), 'utf8'), 'from upstream\n');
  t.false((await call<{ updated: boolean }>('orch.git.refresh', { binding_id: b.binding_id })).updated);

  const listed = await call<{ bindings: Binding[]; total: number }>('orch.git.list', {});
  t.true(listed.bindings.some((x) => x.binding_id === b.binding_id && x.head_commit === upstreamHead));

  const del = await call<{ deleted: boolean; volume_deleted: boolean }>('orch.git.delete', { binding_id: b.binding_id });
  t.true(del.deleted);
  t.true(del.volume_deleted);
  t.false((await call<{ bindings: Binding[] }>('orch.git.list', {})).bindings.some((x) => x.binding_id === b.binding_id));
  t.is((await failure('orch.git.status', { binding_id: b.binding_id })).error, 'NOT_FOUND');
  await t.throwsAsync(volumes.get('acme', b.volume_id));
  // Soft delete: the row stays with deleted_at.
  const row = (await db.query<{ status: string; deleted_at: Date | null }>('SELECT status, deleted_at FROM git_bindings WHERE id = $1', [b.binding_id])).rows[0];
  t.is(row?.status, 'deleted');
  t.truthy(row?.deleted_at);
});

test.serial('file:// URL and a pinned ref', async (t) => {
  execFileSync('git', ['--git-dir', bare, 'branch', 'stable', 'main~1']);
  const b = await call<Binding & { ref: string }>('orch.git.clone', { repo_url: `file://${bare}`, label: 'pinned', ref: 'stable' });
  t.is(b.ref, 'stable');
  t.is((await call<{ branch: string }>('orch.git.status', { binding_id: b.binding_id })).branch, 'stable');
  t.is(b.head_commit, execFileSync('git', ['--git-dir', bare, 'rev-parse', 'stable'], { encoding: 'utf8' }).trim());
});

test.serial('tenant isolation: another tenant cannot see, use or delete the binding', async (t) => {
  const b = await call<Binding>('orch.git.clone', { repo_url: bare, label: 'mine' });
  const theirs = await call<{ bindings: Binding[]; total: number }>('orch.git.list', {}, other);
  t.is(theirs.total, 0);
  t.deepEqual(theirs.bindings, []);
  for (const tool of ['orch.git.status', 'orch.git.diff', 'orch.git.refresh', 'orch.git.push', 'orch.git.delete']) {
    t.is((await failure(tool, { binding_id: b.binding_id }, other)).error, 'NOT_FOUND', tool);
  }
  t.is((await failure('orch.git.commit', { binding_id: b.binding_id, message: 'x' }, other)).error, 'NOT_FOUND');
  t.is((await call<{ clean: boolean }>('orch.git.status', { binding_id: b.binding_id })).clean, true, 'still there for its tenant');
});

test.serial('repo_url policy: local repositories only when the node allows them; other schemes refused', async (t) => {
  for (const url of [bare, `file://${bare}`]) {
    const e = await failure('orch.git.clone', { repo_url: url, label: 'x' }, acme, strict);
    t.is(e.error, 'InvalidArguments', url);
    t.regex(e.message, /https:\/\//);
  }
  for (const url of ['ssh://git@example.com/x.git', 'git://example.com/x.git', 'http://example.com/x.git', 'ext::sh -c touch% /tmp/pwned', '--upload-pack=touch /tmp/x', 'git@example.com:x.git', 'relative/path']) {
    t.is((await failure('orch.git.clone', { repo_url: url, label: 'x' })).error, 'InvalidArguments', url);
  }
  t.is((await failure('orch.git.clone', { repo_url: bare, label: 'x', ref: '--upload-pack=x' })).error, 'InvalidArguments');
  t.is((await failure('orch.git.clone', { repo_url: null, label: 'x' })).error, 'InvalidArguments');
  t.is((await failure('orch.git.status', { binding_id: 'not-a-uuid' })).error, 'NOT_FOUND');
});

test.serial('credentials in the URL never appear in an answer; a failed clone is recorded as failed', async (t) => {
  const e = await failure('orch.git.clone', { repo_url: 'https://alice:s3cr3t-t0ken@127.0.0.1:1/repo.git', label: 'secret' });
  t.is(e.error, 'GitCloneFailed');
  t.notRegex(e.message, /s3cr3t/);
  t.regex(e.message, /\*\*\*@127\.0\.0\.1/);
  const listed = await call<{ bindings: (Binding & { error: string })[] }>('orch.git.list', {});
  const failed = listed.bindings.find((x) => x.repo_url.includes('127.0.0.1:1'));
  t.is(failed?.status, 'failed');
  t.notRegex(JSON.stringify(listed), /s3cr3t/);
  t.is(failed?.volume_id ? await volumes.get('acme', failed.volume_id).then(() => 'exists', () => 'gone') : 'gone', 'gone');
  t.is((await failure('orch.git.status', { binding_id: failed!.binding_id })).error, 'BindingNotReady');
});

test.serial('status counts local commits ahead; refresh over diverged history → RefreshConflict, nothing lost', async (t) => {
  const b = await call<Binding>('orch.git.clone', { repo_url: bare, label: 'diverge' });
  const work = await volumes.hostPath('acme', b.volume_id);
  await writeFile(path.join(work, 'local.txt'), 'local\n');
  const local = await call<{ commit: string }>('orch.git.commit', { binding_id: b.binding_id, message: 'local work' });
  t.false((await call<{ updated: boolean }>('orch.git.refresh', { binding_id: b.binding_id })).updated, 'nothing new upstream; local work kept');
  const st = await call<{ ahead: number; behind: number; upstream: string }>('orch.git.status', { binding_id: b.binding_id });
  t.is(st.upstream, 'origin/main');
  t.is(st.ahead, 1);
  // Upstream moves on independently.
  const elsewhere = path.join(dir, 'elsewhere-2');
  execFileSync('git', ['clone', '-q', bare, elsewhere]);
  await writeFile(path.join(elsewhere, 'theirs.txt'), 'theirs\n');
  git(elsewhere, 'add', '.');
  git(elsewhere, 'commit', '-q', '-m', 'their work');
  git(elsewhere, 'push', '-q', 'origin', 'HEAD:refs/heads/main');
  const e = await failure('orch.git.refresh', { binding_id: b.binding_id });
  t.is(e.error, 'RefreshConflict');
  t.is(git(work, 'rev-parse', 'HEAD').trim(), local.commit, 'the local commit is kept');
  // Pushing the diverged branch is refused by the remote (non fast-forward): a tool error, not a crash.
  t.is((await failure('orch.git.push', { binding_id: b.binding_id })).error, 'GitCommandFailed');
});
