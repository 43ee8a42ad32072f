// GitService: git bindings (seed 001 orch.git.*) — a clone of a repository in its own volume, worked on with the
// real git binary (src/git/run.ts). One service for every transport (the orch.git.* tools today).
//
// A binding is a row of git_bindings (migration 008) plus a volume made through the VolumeService (owner_kind
// 'git_binding', owner_ref = the binding id); the working directory is the volume's directory, so the quota and
// the volume's lifetime are the volumes capability's. The row is written before anything is done (status
// `cloning`), then the volume, then the clone; a failed clone leaves the row `failed` with the (redacted) reason and
// its volume removed. Deleting soft-deletes the row (deleted_at, status `deleted`) and deletes the volume.
// Every query names the tenant; an id of another tenant is NOT_FOUND. Operations on one binding are serialised in
// this process (git's index.lock would refuse concurrent ones anyway).
//
// repo_url: https:// always; file:// URLs and absolute local paths only when the node allows local repositories
// (builtin_dispatchers `git` config `allow_local_repos: true`). Other schemes (ssh, git, http, ext::…) are refused;
// GIT_ALLOW_PROTOCOL enforces the same list inside git (submodules, redirects). Credentials in the URL are stored
// (refresh and push need them) but redacted in every answer, error and log line.
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import { KeyedMutex } from '../volumes/mutex.ts';
import type { VolumeService } from '../volumes/service.ts';
import { GitCommandError, redact, redactUrl, runGit, urlSecrets, type GitOutput } from './run.ts';

export const DEFAULT_GIT_VOLUME_BYTES = 1024 * 1024 * 1024;
export const GIT_OWNER_KIND = 'git_binding';

export interface GitSettings {
  allowLocalRepos: boolean;
  volumeSizeLimitBytes: number;
  timeoutSecs: number;
}

/** The node config's `builtin_dispatchers` entry named `git`: `{allow_local_repos, volume_size_limit_bytes, timeout_secs}`. */
export function gitSettingsOf(config: { builtin_dispatchers?: { name: string; config?: Record<string, unknown> }[] } | undefined): GitSettings {
  const c = config?.builtin_dispatchers?.find((d) => d.name === 'git')?.config ?? {};
  const num = (v: unknown, d: number): number => (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : d);
  return {
    allowLocalRepos: c.allow_local_repos === true,
    volumeSizeLimitBytes: num(c.volume_size_limit_bytes, DEFAULT_GIT_VOLUME_BYTES),
    timeoutSecs: num(c.timeout_secs, 300),
  };
}

/** A tool-level git failure with the name callers see (NothingToCommit, GitCommandFailed, …). */
export class GitFailure extends Error {
  constructor(
    readonly error: string,
    message: string,
  ) {
    super(message);
  }
}

export interface GitBinding {
  binding_id: string;
  label: string;
  /** Credentials redacted. */
  repo_url: string;
  ref: string | null;
  status: 'cloning' | 'ready' | 'failed' | 'deleted';
  volume_id: string | null;
  head_commit: string | null;
  error: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

interface Row {
  id: string;
  tenant_id: string;
  owner_subject: string;
  repo_url: string;
  label: string;
  ref: string | null;
  status: GitBinding['status'];
  volume_id: string | null;
  head_commit: string | null;
  error: string | null;
  created_at: Date | string;
  updated_at: Date | string;
  deleted_at: Date | string | null;
}

export interface GitChange {
  path: string;
  /** Porcelain v1 status letters: index (staged) and worktree; `?` for untracked. */
  index: string;
  worktree: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const iso = (v: Date | string | null): string | null => (v === null ? null : new Date(v).toISOString());

function toBinding(r: Row): GitBinding {
  return {
    binding_id: r.id,
    label: r.label,
    repo_url: redactUrl(r.repo_url),
    ref: r.ref,
    status: r.status,
    volume_id: r.volume_id,
    head_commit: r.head_commit,
    error: r.error,
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
    deleted_at: iso(r.deleted_at),
  };
}

const bad = (msg: string): OrchError => new OrchError(Errors.BAD_REQUEST, msg);

/** Validates repo_url; answers the protocols git may use for it. */
export function checkRepoUrl(url: unknown, allowLocal: boolean): string[] {
  if (typeof url !== 'string' || url.trim() === '') throw bad('repo_url must be a non-empty string');
  // eslint-disable-next-line no-control-regex
  if (url.length > 2048 || /[\u0000-\u001f\u007f\s]/.test(url) || url.startsWith('-')) throw bad('repo_url is not a valid repository URL');
  const localHint = allowLocal ? '' : ' (file:// URLs and local paths only when the node allows local repositories)';
  if (/^https:\/\//i.test(url)) {
    try {
      const u = new URL(url);
      if (!u.hostname) throw new Error('no host');
    } catch {
      throw bad(`repo_url ${redactUrl(url)} is not a valid https URL`);
    }
    return allowLocal ? ['https', 'file'] : ['https'];
  }
  const local = /^file:\/\/\//i.test(url) || (url.startsWith('/') && !url.startsWith('//'));
  if (local) {
    if (!allowLocal) throw bad(`repo_url must be an https:// URL${localHint}`);
    return ['https', 'file'];
  }
  throw bad(`repo_url must be an https:// URL${localHint}; got ${redactUrl(url).slice(0, 100)}`);
}

/** A local upstream (allowed only where the node allows local repositories): git must be able to push into it. */
function localUpstream(url: string): string[] {
  const p = url.startsWith('/') && !url.startsWith('//') ? url : /^file:\/\/\//i.test(url) ? decodeURIComponent(url.slice('file://'.length)) : null;
  // A path that does not exist is left to git to report (bwrap would refuse to bind it, less clearly).
  return p && existsSync(p) ? [p] : [];
}

function checkRef(ref: unknown): string | null {
  if (ref === undefined || ref === null || ref === '') return null;
  if (typeof ref !== 'string' || ref.length > 250 || !/^[A-Za-z0-9._/-]+$/.test(ref) || ref.startsWith('-') || ref.includes('..') || ref.endsWith('/') || ref.endsWith('.lock')) {
    throw bad('ref must be a branch or tag name (letters, digits, . _ / -)');
  }
  return ref;
}

function checkLabel(label: unknown): string {
  if (typeof label !== 'string' || label.trim() === '') throw bad('label must be a non-empty string');
  const l = label.trim();
  // eslint-disable-next-line no-control-regex
  if (l.length > 200 || /[\u0000-\u001f\u007f]/.test(l)) throw bad('label must be at most 200 characters without control characters');
  return l;
}

/** Porcelain v1 `-b` output → branch line + changes. */
export function parseStatus(out: string): { branch: string | null; upstream: string | null; ahead: number; behind: number; changes: GitChange[] } {
  let branch: string | null = null;
  let upstream: string | null = null;
  let ahead = 0;
  let behind = 0;
  const changes: GitChange[] = [];
  for (const line of out.split('\n')) {
    if (line.startsWith('## ')) {
      const m = /^## (?:No commits yet on )?([^.\s]+(?:\.(?!\.)[^.\s]*)*)(?:\.\.\.(\S+))?(?: \[(.*)\])?/.exec(line);
      if (m) {
        branch = m[1] === 'HEAD' ? null : (m[1] ?? null);
        upstream = m[2] ?? null;
        ahead = Number(/ahead (\d+)/.exec(m[3] ?? '')?.[1] ?? 0);
        behind = Number(/behind (\d+)/.exec(m[3] ?? '')?.[1] ?? 0);
      }
    } else if (line.length > 3) {
      changes.push({ index: line[0] ?? ' ', worktree: line[1] ?? ' ', path: line.slice(3) });
    }
  }
  return { branch, upstream, ahead, behind, changes };
}

export class GitService {
  private readonly mutex = new KeyedMutex();
  private readonly log: Logger;

  constructor(
    private readonly o: { db: Db; volumes: VolumeService; settings: GitSettings; logger: Logger },
  ) {
    this.log = o.logger.child({ component: 'git' });
  }

  private async row(tenantId: string, id: string, opts: { includeDeleted?: boolean } = {}): Promise<Row> {
    if (typeof id !== 'string' || !UUID.test(id)) throw new OrchError(Errors.NOT_FOUND, `git binding ${String(id)} not found`);
    const r = (
      await this.o.db.query<Row>(`SELECT * FROM git_bindings WHERE tenant_id = $1 AND id = $2${opts.includeDeleted ? '' : ' AND deleted_at IS NULL'}`, [tenantId, id])
    ).rows[0];
    if (!r) throw new OrchError(Errors.NOT_FOUND, `git binding ${id} not found`);
    return r;
  }

  private async update(tenantId: string, id: string, set: Partial<Pick<Row, 'status' | 'volume_id' | 'head_commit' | 'error'>>): Promise<void> {
    const keys = Object.keys(set) as (keyof typeof set)[];
    const sql = keys.map((k, i) => `${k} = $${i + 3}`).join(', ');
    await this.o.db.query(`UPDATE git_bindings SET ${sql}, updated_at = now() WHERE tenant_id = $1 AND id = $2`, [tenantId, id, ...keys.map((k) => set[k] ?? null)]);
  }

  private git(r: Row, dir: string, args: string[]): Promise<GitOutput> {
    return runGit(args, {
      cwd: dir,
      protocols: checkRepoUrl(r.repo_url, this.o.settings.allowLocalRepos),
      timeoutMs: this.o.settings.timeoutSecs * 1000,
      secrets: urlSecrets(r.repo_url),
      writable: localUpstream(r.repo_url),
    });
  }

  /** A ready binding's working directory, with the binding lock held around `fn`. */
  private async withRepo<T>(tenantId: string, id: string, fn: (r: Row, dir: string) => Promise<T>): Promise<T> {
    const first = await this.row(tenantId, id);
    return this.mutex.run(first.id, async () => {
      const r = await this.row(tenantId, id);
      if (r.status !== 'ready' || !r.volume_id) throw new GitFailure('BindingNotReady', `git binding ${id} is ${r.status}${r.error ? `: ${r.error}` : ''}`);
      const dir = await this.o.volumes.hostPath(tenantId, r.volume_id);
      try {
        return await fn(r, dir);
      } catch (err) {
        if (err instanceof GitCommandError) throw new GitFailure('GitCommandFailed', err.message);
        throw err;
      }
    });
  }

  private async head(r: Row, dir: string): Promise<string | null> {
    try {
      return (await this.git(r, dir, ['rev-parse', '--verify', '--quiet', 'HEAD'])).stdout.trim() || null;
    } catch {
      return null; // an empty repository has no HEAD commit
    }
  }

  async clone(input: { tenantId: string; ownerSubject: string; repoUrl: unknown; label: unknown; ref?: unknown }): Promise<GitBinding> {
    const protocols = checkRepoUrl(input.repoUrl, this.o.settings.allowLocalRepos);
    const repoUrl = input.repoUrl as string;
    const label = checkLabel(input.label);
    const ref = checkRef(input.ref);
    const id = randomUUID();
    await this.o.db.query(
      `INSERT INTO git_bindings (id, tenant_id, owner_subject, repo_url, label, ref, status) VALUES ($1, $2, $3, $4, $5, $6, 'cloning')`,
      [id, input.tenantId, input.ownerSubject, repoUrl, label, ref],
    );
    let volumeId: string | undefined;
    try {
      const volume = await this.o.volumes.create({
        tenantId: input.tenantId,
        ownerSubject: input.ownerSubject,
        label: `git: ${label}`.slice(0, 200),
        sizeLimitBytes: this.o.settings.volumeSizeLimitBytes,
        owner: { kind: GIT_OWNER_KIND, ref: id },
      });
      volumeId = volume.id;
      await this.update(input.tenantId, id, { volume_id: volumeId });
      const dir = await this.o.volumes.hostPath(input.tenantId, volumeId);
      this.log.info({ binding: id, tenant: input.tenantId, repo: redactUrl(repoUrl), ref }, 'git clone');
      // --no-checkout: the clone writes `.git/config` while it runs, so it cannot run under a frozen copy; the
      // checkout (which runs the filters the attributes name) is a second git run that does (src/git/run.ts).
      await runGit(['clone', '--no-checkout', '--no-hardlinks', ...(ref ? ['--branch', ref] : []), '--', repoUrl, '.'], {
        cwd: dir,
        protocols,
        timeoutMs: this.o.settings.timeoutSecs * 1000,
        secrets: urlSecrets(repoUrl),
        writable: localUpstream(repoUrl),
      });
      const r = await this.row(input.tenantId, id);
      if (await this.head(r, dir)) await this.git(r, dir, ['reset', '-q', '--hard']);
      await this.o.volumes.recount(input.tenantId, volumeId);
      await this.update(input.tenantId, id, { status: 'ready', head_commit: await this.head(r, dir), error: null });
    } catch (err) {
      const message = redact(err instanceof Error ? err.message : String(err), urlSecrets(repoUrl));
      this.log.warn({ binding: id, repo: redactUrl(repoUrl), err: message }, 'git clone failed');
      await this.update(input.tenantId, id, { status: 'failed', error: message.slice(0, 4000) });
      if (volumeId) await this.o.volumes.delete(input.tenantId, volumeId).catch(() => undefined);
      throw new GitFailure('GitCloneFailed', `clone of ${redactUrl(repoUrl)} failed (binding ${id} is marked failed): ${message}`);
    }
    return toBinding(await this.row(input.tenantId, id));
  }

  async list(tenantId: string, o: { page?: number; limit?: number } = {}): Promise<{ bindings: GitBinding[]; page: number; limit: number; total: number }> {
    const limit = Math.min(200, Math.max(1, Math.trunc(o.limit ?? 50)));
    const page = Math.max(1, Math.trunc(o.page ?? 1));
    const rows = await this.o.db.query<Row>(
      `SELECT * FROM git_bindings WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at, id LIMIT $2 OFFSET $3`,
      [tenantId, limit, (page - 1) * limit],
    );
    const total = (await this.o.db.query<{ n: number | string }>(`SELECT count(*) AS n FROM git_bindings WHERE tenant_id = $1 AND deleted_at IS NULL`, [tenantId])).rows[0]?.n ?? 0;
    return { bindings: rows.rows.map(toBinding), page, limit, total: Number(total) };
  }

  async get(tenantId: string, id: string): Promise<GitBinding> {
    return toBinding(await this.row(tenantId, id));
  }

  async status(tenantId: string, id: string): Promise<{ binding_id: string; head_commit: string | null; clean: boolean } & ReturnType<typeof parseStatus>> {
    return this.withRepo(tenantId, id, async (r, dir) => {
      const st = parseStatus((await this.git(r, dir, ['status', '--porcelain=v1', '-b', '--untracked-files=all'])).stdout);
      return { binding_id: r.id, head_commit: await this.head(r, dir), clean: st.changes.length === 0, ...st };
    });
  }

  /** Unified diff of the working directory against the index, or (staged) of the index against HEAD. */
  async diff(tenantId: string, id: string, o: { staged?: boolean } = {}): Promise<{ binding_id: string; staged: boolean; diff: string }> {
    return this.withRepo(tenantId, id, async (r, dir) => {
      const out = await this.git(r, dir, ['diff', '--no-color', '--no-ext-diff', ...(o.staged ? ['--cached'] : [])]);
      return { binding_id: r.id, staged: o.staged === true, diff: out.stdout };
    });
  }

  /** Stages every change (additions, edits, deletions) and commits it. */
  async commit(tenantId: string, id: string, message: unknown, author: { name: string; email: string }): Promise<{ binding_id: string; commit: string; summary: string }> {
    if (typeof message !== 'string' || message.trim() === '') throw bad('message must be a non-empty string');
    return this.withRepo(tenantId, id, async (r, dir) => {
      await this.git(r, dir, ['add', '--all']);
      const staged = (await this.git(r, dir, ['diff', '--cached', '--name-only'])).stdout.trim();
      if (!staged) throw new GitFailure('NothingToCommit', `git binding ${id} has no changes to commit`);
      // The message is one argument (no shell); hooks are not run (--no-verify): a cloned repository's hooks are
      // not ours to execute. Name and email lose characters git would reject.
      const clean = (v: string) => v.replace(/[<>\n\r\0]/g, '').trim() || 'orch';
      await this.git(r, dir, ['-c', `user.name=${clean(author.name)}`, '-c', `user.email=${clean(author.email)}`, '-c', 'commit.gpgsign=false', 'commit', '--no-verify', '-q', '-m', message]);
      const head = await this.head(r, dir);
      await this.update(tenantId, r.id, { head_commit: head });
      await this.o.volumes.recount(tenantId, r.volume_id!);
      return { binding_id: r.id, commit: head ?? '', summary: staged.split('\n').length + ' file(s) committed' };
    });
  }

  /** Pushes the current branch to the same branch of origin. */
  async push(tenantId: string, id: string): Promise<{ binding_id: string; branch: string; commit: string | null }> {
    return this.withRepo(tenantId, id, async (r, dir) => {
      const branch = (await this.git(r, dir, ['symbolic-ref', '--quiet', '--short', 'HEAD']).catch(() => ({ stdout: '' }))).stdout.trim();
      if (!branch) throw new GitFailure('DetachedHead', `git binding ${id} is not on a branch; nothing to push`);
      await this.git(r, dir, ['push', '--porcelain', 'origin', `HEAD:refs/heads/${branch}`]);
      this.log.info({ binding: r.id, repo: redactUrl(r.repo_url), branch }, 'git push');
      return { binding_id: r.id, branch, commit: await this.head(r, dir) };
    });
  }

  /** Fetches origin and fast-forwards to the pinned ref (a branch), or checks out the pinned tag/commit. */
  async refresh(tenantId: string, id: string): Promise<{ binding_id: string; previous_commit: string | null; head_commit: string | null; updated: boolean }> {
    return this.withRepo(tenantId, id, async (r, dir) => {
      const previous = await this.head(r, dir);
      await this.git(r, dir, ['fetch', '--tags', '--prune', 'origin']);
      const current = (await this.git(r, dir, ['symbolic-ref', '--quiet', '--short', 'HEAD']).catch(() => ({ stdout: '' }))).stdout.trim();
      const branch = r.ref ?? current;
      const remoteBranch = branch ? (await this.git(r, dir, ['rev-parse', '--verify', '--quiet', `refs/remotes/origin/${branch}`]).catch(() => ({ stdout: '' }))).stdout.trim() : '';
      if (remoteBranch) {
        // --no-track: git runs with its config bound read-only (src/git/run.ts), so it cannot record an upstream;
        // the merge below names the remote branch itself.
        if (current !== branch) await this.git(r, dir, ['checkout', '-q', '--no-track', branch]);
        try {
          await this.git(r, dir, ['merge', '--ff-only', '-q', `refs/remotes/origin/${branch}`]);
        } catch (err) {
          if (err instanceof GitCommandError) throw new GitFailure('RefreshConflict', `cannot fast-forward ${branch} to origin/${branch} (local commits or changes are in the way): ${err.stderr.slice(-1000)}`);
          throw err;
        }
      } else if (r.ref) {
        await this.git(r, dir, ['checkout', '-q', '--detach', r.ref]);
      } else {
        throw new GitFailure('DetachedHead', `git binding ${id} pins no ref and is not on a branch`);
      }
      const head = await this.head(r, dir);
      await this.update(tenantId, r.id, { head_commit: head });
      await this.o.volumes.recount(tenantId, r.volume_id!);
      return { binding_id: r.id, previous_commit: previous, head_commit: head, updated: head !== previous };
    });
  }

  /** Soft-deletes the binding (the row stays, deleted_at set) and deletes its volume. */
  async delete(tenantId: string, id: string): Promise<{ binding_id: string; deleted: true; volume_deleted: boolean }> {
    const first = await this.row(tenantId, id);
    return this.mutex.run(first.id, async () => {
      const r = await this.row(tenantId, id);
      await this.o.db.query(`UPDATE git_bindings SET status = 'deleted', deleted_at = now(), updated_at = now() WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, [tenantId, r.id]);
      let volumeDeleted = false;
      if (r.volume_id) {
        try {
          await this.o.volumes.delete(tenantId, r.volume_id);
          volumeDeleted = true;
        } catch (err) {
          // Already gone (NOT_FOUND) is fine; anything else is logged — the binding is deleted for callers either way.
          if (!(err instanceof OrchError && err.code === Errors.NOT_FOUND.code)) this.log.warn({ err, binding: r.id, volume: r.volume_id }, 'deleting the binding volume failed');
        }
      }
      this.log.info({ binding: r.id, tenant: tenantId }, 'git binding deleted');
      return { binding_id: r.id, deleted: true, volume_deleted: volumeDeleted };
    });
  }
}
