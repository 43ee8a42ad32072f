// Git tools (seed 001 "Volume, file, git and script tools"), over the GitService (src/git/service.ts):
//   orch.git.clone    repo_url, label (+ ref)        → the binding (status ready)            skip_judge false
//   orch.git.list     none (+ page, limit)           → {bindings, page, limit, total}         skip_judge true
//   orch.git.status   binding_id                     → {branch, ahead, behind, clean, changes} skip_judge true
//   orch.git.diff     binding_id (+ staged)          → {diff} (unified)                      skip_judge true
//   orch.git.refresh  binding_id                     → {previous_commit, head_commit, updated} skip_judge false
//   orch.git.delete   binding_id                     → soft delete + its volume              skip_judge false
//   orch.git.push     binding_id                     → {branch, commit}                      skip_judge false
//   orch.git.commit   binding_id, message            → {commit, summary}                     skip_judge false
// Scoped to ctx.tenantId; the caller (ctx.principal) owns a new binding and authors its commits. Failures are tool
// results: InvalidArguments (a bad repo_url, ref or label), NOT_FOUND (no such binding in this tenant),
// GitCloneFailed, GitCommandFailed, NothingToCommit, RefreshConflict, DetachedHead, BindingNotReady.
import { GitFailure, type GitService } from '../../git/service.ts';
import type { ToolCallContext, ToolDefinition, ToolOutcome } from '../types.ts';
import { bool, fail, int, ok, schema } from './util.ts';

export interface GitToolsDeps {
  git: GitService;
}

const bindingId = { type: 'string', description: 'the git binding id (a UUID)' };

async function run(fn: () => Promise<unknown>): Promise<ToolOutcome> {
  try {
    return ok(await fn());
  } catch (err) {
    if (err instanceof GitFailure) return fail(err.error, err.message);
    throw err; // OrchError / errno: the catalog maps it (InvalidArguments, NOT_FOUND, StorageFull, …)
  }
}

function author(ctx: ToolCallContext): { name: string; email: string } {
  const name = ctx.principal.username ?? ctx.principal.subject;
  const local = ctx.principal.subject.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 64) || 'orch';
  return { name, email: `${local}@${ctx.tenantId.replace(/[^A-Za-z0-9.-]/g, '-') || 'orch'}.orch.invalid` };
}

export function gitTools({ git }: GitToolsDeps): ToolDefinition[] {
  return [
    {
      name: 'orch.git.clone',
      description: 'Clone a repository (https://) into a new git binding with its own volume.',
      inputSchema: schema(
        {
          repo_url: { type: 'string', description: 'https:// URL of the repository' },
          label: { type: 'string', description: 'a name for the binding' },
          ref: { type: 'string', description: 'branch or tag to check out (default: the remote default branch)' },
        },
        ['repo_url', 'label'],
      ),
      required: ['repo_url', 'label'],
      skipJudge: false,
      handler: (ctx, args) => run(() => git.clone({ tenantId: ctx.tenantId, ownerSubject: ctx.principal.subject, repoUrl: args.repo_url, label: args.label, ref: args.ref })),
    },
    {
      name: 'orch.git.list',
      description: 'List the git bindings of the tenant.',
      inputSchema: schema({ page: { type: 'integer', minimum: 1 }, limit: { type: 'integer', minimum: 1, maximum: 200 } }),
      required: [],
      skipJudge: true,
      handler: (ctx, args) => run(() => git.list(ctx.tenantId, { page: int(args.page, 1, 1), limit: int(args.limit, 50, 1, 200) })),
    },
    {
      name: 'orch.git.status',
      description: 'Branch, ahead/behind and changed files of a git binding.',
      inputSchema: schema({ binding_id: bindingId }, ['binding_id']),
      required: ['binding_id'],
      skipJudge: true,
      handler: (ctx, args) => run(() => git.status(ctx.tenantId, String(args.binding_id))),
    },
    {
      name: 'orch.git.diff',
      description: 'Unified diff of the working directory (or, with staged, of the index) of a git binding.',
      inputSchema: schema({ binding_id: bindingId, staged: { type: 'boolean', description: 'diff the index against HEAD' } }, ['binding_id']),
      required: ['binding_id'],
      skipJudge: true,
      handler: (ctx, args) => run(() => git.diff(ctx.tenantId, String(args.binding_id), { staged: bool(args.staged, false) })),
    },
    {
      name: 'orch.git.refresh',
      description: 'Fetch from origin and fast-forward to the pinned ref.',
      inputSchema: schema({ binding_id: bindingId }, ['binding_id']),
      required: ['binding_id'],
      skipJudge: false,
      handler: (ctx, args) => run(() => git.refresh(ctx.tenantId, String(args.binding_id))),
    },
    {
      name: 'orch.git.delete',
      description: 'Delete a git binding (soft delete) and its volume.',
      inputSchema: schema({ binding_id: bindingId }, ['binding_id']),
      required: ['binding_id'],
      skipJudge: false,
      handler: (ctx, args) => run(() => git.delete(ctx.tenantId, String(args.binding_id))),
    },
    {
      name: 'orch.git.push',
      description: 'Push the current branch of a git binding to origin.',
      inputSchema: schema({ binding_id: bindingId }, ['binding_id']),
      required: ['binding_id'],
      skipJudge: false,
      handler: (ctx, args) => run(() => git.push(ctx.tenantId, String(args.binding_id))),
    },
    {
      name: 'orch.git.commit',
      description: 'Stage every change of a git binding and commit it.',
      inputSchema: schema({ binding_id: bindingId, message: { type: 'string', description: 'the commit message' } }, ['binding_id', 'message']),
      required: ['binding_id', 'message'],
      skipJudge: false,
      handler: (ctx, args) => run(() => git.commit(ctx.tenantId, String(args.binding_id), args.message, author(ctx))),
    },
  ];
}
