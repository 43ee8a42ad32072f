// WorkflowDefinitionService: the workflow registry, one implementation behind HTTP, the orch.workflow.* tools, the
// CLI and the engine (resolve). Validate first (parseWorkflowManifest), then write in one transaction; every query
// is scoped by the caller's tenant.
//
// Identity: a workflow version is a row with its own workflow_id; (name, version) is unique per scope owner — a
// tenant, a user of a tenant, or the global scope. Redeploying an existing name and version is 409 unless `force`,
// which replaces it in place (same workflow_id).
// Latest: the highest semantic version of a name in a scope (not the one deployed last), so a hotfix of an old
// release line does not take over the runs that name no version.
// Visibility and shadowing: a caller sees its own user-scoped workflows, its tenant's, and the global ones; a name
// resolves to the first of those three scopes that has it (user, then tenant, then global). The engine, acting
// with no user, sees tenant and global only.
// Scope changes: deploy picks `tenant` (default), `user` or `global` (operator only). Promote moves a workflow's
// versions user → tenant (operator or tenant-admin) or tenant → global (operator); demote moves global → tenant
// (operator) or tenant → user (operator or tenant-admin). A move that would collide with a version already in the
// target scope is 409 and moves nothing.
import { randomUUID } from 'node:crypto';
import semver from 'semver';
import { SYSTEM_TENANT, type Role, type Viewer } from '../../auth/principal.ts';
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Db } from '../../storage/db.ts';
import { parseWorkflowManifest } from '../manifest/parse.ts';
import type { ManifestError, ParseResult, WorkflowManifest } from '../manifest/types.ts';
import * as repo from './repo.ts';
import type { Place, WorkflowRow } from './repo.ts';
import {
  WORKFLOW_SCOPES,
  type WorkflowDefinition,
  type WorkflowDetail,
  type WorkflowScope,
  type WorkflowSummary,
  type WorkflowVersionInfo,
} from './types.ts';

export * from './types.ts';

export const WORKFLOW_NOT_FOUND = 'Workflow not found';

/** 422: the manifest did not validate; `errors` name each field. */
export class WorkflowManifestInvalid extends OrchError {
  readonly errors: ManifestError[];
  constructor(errors: ManifestError[]) {
    super(Errors.VALIDATION, 'invalid workflow manifest', { details: errors });
    this.name = 'WorkflowManifestInvalid';
    this.errors = errors;
  }
}

/** Who asks: the subject (owner of user-scoped workflows) and roles (operator, tenant-admin). */
export type { Viewer };

export interface DeployRequest extends Viewer {
  tenant: string;
  yaml: string;
  force?: boolean;
  /** Default `tenant`. */
  scope?: WorkflowScope;
}

export interface DeployResult {
  workflow_id: string;
  name: string;
  version: string;
  scope: WorkflowScope;
  /** true when `force` replaced an existing name and version. */
  replaced: boolean;
  manifest: WorkflowManifest;
}

export type ListFilter = WorkflowScope | 'visible';

export interface ScopeChangeResult {
  workflow_id: string;
  name: string;
  from_scope: WorkflowScope;
  target_scope: WorkflowScope;
  versions: string[];
}

/** Cached run resolutions at most (then all are dropped: a node runs far fewer distinct workflows than this). */
const RUN_CACHE_LIMIT = 4096;

/** A resolution for a run start: the definition and, when resolved by name, the fingerprint its INSERT checks. */
export interface ResolvedForRun {
  definition: WorkflowDefinition;
  fingerprint?: string | undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SCOPE_ORDER: Record<WorkflowScope, number> = { user: 0, tenant: 1, global: 2 };

function iso(v: Date | string): string {
  return (v instanceof Date ? v : new Date(v)).toISOString();
}

function notFound(what = WORKFLOW_NOT_FOUND): OrchError {
  return new OrchError(Errors.NOT_FOUND, what);
}

function has(viewer: Viewer, ...roles: Role[]): boolean {
  return roles.some((r) => viewer.roles?.includes(r) ?? false);
}

function need(viewer: Viewer, why: string, ...roles: Role[]): void {
  if (!has(viewer, ...roles)) throw new OrchError(Errors.FORBIDDEN, `${why} requires role ${roles.join(' or ')}`);
}

/** Highest semantic version first. */
function byVersionDesc(a: WorkflowRow, b: WorkflowRow): number {
  return semver.rcompare(a.version, b.version);
}

function placeOf(r: WorkflowRow): Place {
  return { tenantId: r.tenant_id, scope: r.scope, owner: r.scope_owner };
}

function placeKey(p: Place): string {
  return `${p.tenantId}\u0000${p.scope}\u0000${p.owner}`;
}

export function placeFor(tenant: string, scope: WorkflowScope, subject: string): Place {
  if (scope === 'global') return { tenantId: SYSTEM_TENANT, scope, owner: '' };
  if (scope === 'user') return { tenantId: tenant, scope, owner: subject };
  return { tenantId: tenant, scope, owner: '' };
}

/** Rows grouped by place and name, in resolution order (user, tenant, global); each group highest version first. */
function groups<R extends WorkflowRow>(rows: R[]): R[][] {
  const by = new Map<string, R[]>();
  for (const r of rows) {
    const k = `${placeKey(placeOf(r))}\u0000${r.name}`;
    const g = by.get(k);
    if (g) g.push(r);
    else by.set(k, [r]);
  }
  const out = [...by.values()].map((g) => g.sort(byVersionDesc));
  return out.sort((a, b) => SCOPE_ORDER[a[0]!.scope] - SCOPE_ORDER[b[0]!.scope] || a[0]!.name.localeCompare(b[0]!.name));
}

function definition(r: WorkflowRow): WorkflowDefinition {
  return {
    id: r.id,
    name: r.name,
    version: r.version,
    scope: r.scope,
    tenant_id: r.tenant_id,
    manifest: r.manifest as WorkflowManifest,
    manifest_yaml: r.manifest_yaml,
    created_at: iso(r.created_at),
  };
}

function detail(r: WorkflowRow): WorkflowDetail {
  return {
    ...definition(r),
    workflow_id: r.id,
    owner: r.scope === 'user' ? r.scope_owner : null,
    deployed_by: r.deployed_by,
    description: r.description,
    labels: r.labels ?? {},
    updated_at: iso(r.updated_at),
  };
}

function summary(group: WorkflowRow[]): WorkflowSummary {
  const latest = group[0]!;
  return {
    id: latest.id,
    workflow_id: latest.id,
    name: latest.name,
    version: latest.version,
    scope: latest.scope,
    tenant_id: latest.tenant_id,
    owner: latest.scope === 'user' ? latest.scope_owner : null,
    description: latest.description,
    labels: latest.labels ?? {},
    initial_state: latest.initial_state,
    versions: group.length,
    created_at: iso(group.reduce((m, r) => (iso(r.created_at) < m ? iso(r.created_at) : m), iso(latest.created_at))),
    updated_at: iso(group.reduce((m, r) => (iso(r.updated_at) > m ? iso(r.updated_at) : m), iso(latest.updated_at))),
  };
}

/** A deployed workflow version (deploy, update): what the Cortex search index embeds. */
export interface WorkflowDeployed {
  /** The tenant that holds it (`orch-system` for a global workflow). */
  tenant_id: string;
  workflow_id: string;
  name: string;
  description: string | null;
  labels: Record<string, string>;
}

export class WorkflowDefinitionService {
  private readonly log: Logger;
  private readonly deployListeners: ((e: WorkflowDeployed) => Promise<void>)[] = [];

  /** Called after each committed deploy or update (the Cortex search index, node.ts); a failing listener is logged. */
  onDeployed(fn: (e: WorkflowDeployed) => Promise<void>): void {
    this.deployListeners.push(fn);
  }

  constructor(
    private readonly db: Db,
    logger: Logger,
  ) {
    this.log = logger.child({ component: 'workflow-registry' });
  }

  /** Deterministic validation only (no database): orch.workflow.validate, orch.schema.validate. */
  validate(input: string | unknown): ParseResult {
    return parseWorkflowManifest(input);
  }

  /** Validates and stores one version; 409 when it exists and `force` is not set (then it is replaced in place). */
  async deploy(req: DeployRequest): Promise<DeployResult> {
    const scope = req.scope ?? 'tenant';
    if (!WORKFLOW_SCOPES.includes(scope)) throw new OrchError(Errors.BAD_REQUEST, `scope must be one of ${WORKFLOW_SCOPES.join(', ')}`);
    const parsed = parseWorkflowManifest(req.yaml);
    if (!parsed.ok) throw new WorkflowManifestInvalid(parsed.errors);
    if (scope === 'global') need(req, 'deploying a global workflow', 'operator');
    return this.write(placeFor(req.tenant, scope, req.subject), parsed.manifest, req.yaml, req.subject, req.force ?? false);
  }

  /** A new version (or, with force, the same version replaced) of a workflow that must exist: it stays in its scope. */
  async update(tenant: string, yaml: string, viewer: Viewer, opts: { force?: boolean } = {}): Promise<DeployResult> {
    const parsed = parseWorkflowManifest(yaml);
    if (!parsed.ok) throw new WorkflowManifestInvalid(parsed.errors);
    const group = groups(await repo.visibleByName(this.db, tenant, viewer.subject, parsed.manifest.metadata.name))[0];
    if (!group) throw notFound(`workflow ${parsed.manifest.metadata.name} is not deployed; create it first`);
    const at = placeOf(group[0]!);
    if (at.scope === 'global') need(viewer, 'changing a global workflow', 'operator');
    return this.write(at, parsed.manifest, yaml, viewer.subject, opts.force ?? false);
  }

  private async write(at: Place, manifest: WorkflowManifest, yaml: string, by: string, force: boolean): Promise<DeployResult> {
    const { name, version } = manifest.metadata;
    const v: repo.NewVersion = {
      id: randomUUID(),
      name,
      version,
      deployedBy: by,
      description: manifest.metadata.description ?? null,
      labels: manifest.metadata.labels ?? null,
      initialState: manifest.spec.initial_state,
      manifest,
      yaml,
    };
    const result = await this.db.tx(async (tx) => {
      if (await repo.insertIfAbsent(tx, at, v)) return { workflow_id: v.id, replaced: false };
      const existing = (await repo.rowsAt(tx, at, name, true)).find((r) => r.version === version);
      if (!existing) throw new OrchError(Errors.INTERNAL, `workflow ${name} ${version} vanished while being deployed`);
      if (!force) {
        throw new OrchError(Errors.CONFLICT, `workflow ${name} version ${version} already exists in ${at.scope} scope; increment metadata.version or use force to overwrite it`);
      }
      await repo.replace(tx, existing.id, v);
      return { workflow_id: existing.id, replaced: true };
    });
    this.forget(name);
    this.log.info({ tenant: at.tenantId, scope: at.scope, workflow: name, version, workflow_id: result.workflow_id, replaced: result.replaced }, 'workflow deployed');
    const e: WorkflowDeployed = { tenant_id: at.tenantId, workflow_id: result.workflow_id, name, description: v.description, labels: v.labels ?? {} };
    for (const fn of this.deployListeners) await fn(e).catch((err: unknown) => this.log.warn({ err, workflow_id: e.workflow_id }, 'deploy listener failed'));
    return { ...result, name, version, scope: at.scope, manifest };
  }

  /**
   * What the engine runs: the workflow `nameOrId` (a name or a workflow_id) visible to the tenant (and to `userId`
   * when given), at `version` or at the latest version of the first scope that has the name. undefined when none.
   */
  async resolve(tenantId: string, nameOrId: string, version?: string, userId?: string): Promise<WorkflowDefinition | undefined> {
    if (!UUID.test(nameOrId)) return (await this.resolveByName(tenantId, nameOrId, version, userId))?.definition;
    const row = await this.resolveRow(tenantId, nameOrId, version, userId);
    return row ? definition(row) : undefined;
  }

  /**
   * What a run start uses: as resolve(), served from memory after the first read of a (tenant, user, name, version),
   * with the fingerprint of what the name resolved from (repo.visibleFingerprintSql). The start's INSERT checks that
   * fingerprint against the registry in the same statement and writes nothing when it changed (then the caller asks
   * again with `fresh`), so a cached answer is never used after a deploy, forced redeploy, delete or scope change
   * committed on any node or by any process. This node's own registry writes also drop the name at once, so its next
   * start does not pay the mismatch. A workflow_id (UUID) is read each time and carries no fingerprint.
   */
  async resolveForRun(tenant: string, nameOrId: string, version?: string, userId?: string, opts: { fresh?: boolean } = {}): Promise<ResolvedForRun | undefined> {
    if (UUID.test(nameOrId)) {
      const d = await this.resolve(tenant, nameOrId, version, userId);
      return d ? { definition: d } : undefined;
    }
    const key = `${tenant}\u0000${userId ?? ''}\u0000${version ?? ''}`;
    if (opts.fresh !== true) {
      const hit = this.runCache.get(nameOrId)?.get(key);
      if (hit) return hit;
    }
    const r = await this.resolveByName(tenant, nameOrId, version, userId);
    if (!r) return undefined;
    if (r.fingerprint !== undefined) {
      if (this.runCacheSize >= RUN_CACHE_LIMIT) {
        this.runCache.clear();
        this.runCacheSize = 0;
      }
      let byKey = this.runCache.get(nameOrId);
      if (!byKey) this.runCache.set(nameOrId, (byKey = new Map()));
      if (!byKey.has(key)) this.runCacheSize++;
      byKey.set(key, r);
    }
    return r;
  }

  /** Resolutions for runs, by name then by tenant/user/version (see resolveForRun). */
  private readonly runCache = new Map<string, Map<string, ResolvedForRun>>();
  private runCacheSize = 0;

  /** After this process changed rows named `name`: its cached resolutions are dropped (other nodes find out at their
   * next start of it, by the fingerprint check). */
  private forget(name: string): void {
    const byKey = this.runCache.get(name);
    if (!byKey) return;
    this.runCacheSize -= byKey.size;
    this.runCache.delete(name);
  }

  /** Parsed manifests by workflow id and updated_at (a forced redeploy changes updated_at): every uncached run start
   * resolves its version (one light read, no manifest) but the manifest itself is read and parsed once per version. */
  private readonly manifests = new Map<string, { stamp: string; manifest: unknown; manifest_yaml: string }>();

  private async resolveByName(tenant: string, name: string, version: string | undefined, user: string | undefined): Promise<ResolvedForRun | undefined> {
    let head: (WorkflowRow & { fingerprint: string }) | undefined;
    for (const g of groups(await repo.visibleHeadsByName(this.db, tenant, user, name))) {
      head = version === undefined ? g[0] : g.find((r) => r.version === version);
      if (head) break;
    }
    if (!head) return undefined;
    const stampOf = (d: Date | string): string => (d instanceof Date ? d.toISOString() : String(d));
    const stamp = stampOf(head.updated_at);
    let m = this.manifests.get(head.id);
    if (m?.stamp !== stamp) {
      const read = await repo.manifestOf(this.db, head.id);
      // Changed (or removed) between the two reads: resolve again the plain way (no fingerprint: not cached).
      if (!read || stampOf(read.updated_at) !== stamp) return this.resolveRow(tenant, name, version, user).then((r) => (r ? { definition: definition(r) } : undefined));
      m = { stamp, manifest: read.manifest, manifest_yaml: read.manifest_yaml };
      if (this.manifests.size >= 512) this.manifests.clear();
      this.manifests.set(head.id, m);
    }
    return { definition: definition({ ...head, manifest: m.manifest, manifest_yaml: m.manifest_yaml }), fingerprint: head.fingerprint };
  }

  private async resolveRow(tenant: string, nameOrId: string, version: string | undefined, user: string | undefined): Promise<WorkflowRow | undefined> {
    if (UUID.test(nameOrId)) {
      const row = await repo.visibleById(this.db, tenant, user, nameOrId.toLowerCase());
      return row && (version === undefined || row.version === version) ? row : undefined;
    }
    for (const g of groups(await repo.visibleByName(this.db, tenant, user, nameOrId))) {
      if (version === undefined) return g[0];
      const hit = g.find((r) => r.version === version);
      if (hit) return hit;
    }
    return undefined;
  }

  /** The rows of the scope `nameOrId` resolves to (a workflow_id selects its own scope). */
  private async resolveGroup(tenant: string, nameOrId: string, viewer: Viewer): Promise<WorkflowRow[]> {
    if (UUID.test(nameOrId)) {
      const row = await repo.visibleById(this.db, tenant, viewer.subject, nameOrId.toLowerCase());
      if (!row) throw notFound();
      return (await repo.rowsAt(this.db, placeOf(row), row.name)).sort(byVersionDesc);
    }
    const g = groups(await repo.visibleByName(this.db, tenant, viewer.subject, nameOrId))[0];
    if (!g) throw notFound();
    return g;
  }

  /** GET /v1/workflows/{name}[?version=], orch.workflow.export. */
  async get(tenant: string, nameOrId: string, viewer: Viewer, version?: string): Promise<WorkflowDetail> {
    const row = await this.resolveRow(tenant, nameOrId, version, viewer.subject);
    if (!row) throw notFound(version === undefined ? WORKFLOW_NOT_FOUND : `workflow ${nameOrId} has no version ${version}`);
    return detail(row);
  }

  /**
   * Workflows (a name in a scope, with its latest version), by name. `visible`: the caller's user-scoped ones, the
   * tenant's and the global ones; `user`: the caller's own; `tenant`; `global`.
   */
  async list(tenant: string, viewer: Viewer, filter: ListFilter = 'visible'): Promise<WorkflowSummary[]> {
    const rows = await repo.visibleRows(this.db, tenant, viewer.subject);
    const picked = filter === 'visible' ? rows : rows.filter((r) => r.scope === filter);
    return groups(picked)
      .map(summary)
      .sort((a, b) => a.name.localeCompare(b.name) || SCOPE_ORDER[a.scope] - SCOPE_ORDER[b.scope]);
  }

  /** Every version of the workflow in the scope it resolves to, highest first. */
  async versions(tenant: string, nameOrId: string, viewer: Viewer): Promise<{ name: string; scope: WorkflowScope; versions: WorkflowVersionInfo[] }> {
    const g = await this.resolveGroup(tenant, nameOrId, viewer);
    return {
      name: g[0]!.name,
      scope: g[0]!.scope,
      versions: g.map((r, i) => ({
        workflow_id: r.id,
        version: r.version,
        latest: i === 0,
        deployed_by: r.deployed_by,
        created_at: iso(r.created_at),
        updated_at: iso(r.updated_at),
      })),
    };
  }

  /**
   * Deletes the workflow (every version in the scope it resolves to), or one `version`, or the one workflow_id
   * given. Global workflows need an operator.
   */
  async remove(
    tenant: string,
    nameOrId: string,
    viewer: Viewer,
    version?: string,
  ): Promise<{ workflow_id: string; name: string; scope: WorkflowScope; deleted: true; versions: string[] }> {
    const byId = UUID.test(nameOrId);
    const g = await this.resolveGroup(tenant, nameOrId, viewer);
    const head = g[0]!;
    if (head.scope === 'global') need(viewer, 'deleting a global workflow', 'operator');
    let doomed = g;
    if (byId) doomed = g.filter((r) => r.id === nameOrId.toLowerCase());
    if (version !== undefined) doomed = doomed.filter((r) => r.version === version);
    if (doomed.length === 0) throw notFound(`workflow ${head.name} has no version ${version ?? ''}`.trim());
    const deleted = await this.db.tx((tx) => repo.deleteIds(tx, doomed.map((r) => r.id)));
    this.forget(head.name);
    if (deleted === 0) throw notFound();
    this.log.info({ tenant: head.tenant_id, scope: head.scope, workflow: head.name, versions: doomed.map((r) => r.version) }, 'workflow deleted');
    return { workflow_id: doomed[0]!.id, name: head.name, scope: head.scope, deleted: true, versions: doomed.map((r) => r.version) };
  }

  /** user → tenant (operator or tenant-admin), tenant → global (operator). Default target: global. */
  async promote(
    tenant: string,
    name: string,
    viewer: Viewer,
    opts: { target_scope?: string; user_id?: string; version?: string } = {},
  ): Promise<ScopeChangeResult> {
    const target = opts.target_scope ?? 'global';
    if (target === 'tenant') {
      need(viewer, 'promoting a workflow to tenant scope', 'operator', 'tenant-admin');
      return this.move(name, placeFor(tenant, 'user', opts.user_id ?? viewer.subject), placeFor(tenant, 'tenant', ''), opts.version);
    }
    if (target === 'global') {
      need(viewer, 'promoting a workflow to global scope', 'operator');
      return this.move(name, placeFor(tenant, 'tenant', ''), placeFor(tenant, 'global', ''), opts.version);
    }
    throw new OrchError(Errors.BAD_REQUEST, `target_scope of a promote must be tenant or global (got ${JSON.stringify(target)})`);
  }

  /** global → tenant (operator), tenant → user (operator or tenant-admin; `user_id` owner, default the caller). */
  async demote(
    tenant: string,
    name: string,
    viewer: Viewer,
    opts: { target_scope?: string; user_id?: string; version?: string } = {},
  ): Promise<ScopeChangeResult> {
    const target = opts.target_scope ?? 'tenant';
    if (target === 'tenant') {
      need(viewer, 'demoting a global workflow', 'operator');
      return this.move(name, placeFor(tenant, 'global', ''), placeFor(tenant, 'tenant', ''), opts.version);
    }
    if (target === 'user') {
      need(viewer, 'demoting a workflow to user scope', 'operator', 'tenant-admin');
      return this.move(name, placeFor(tenant, 'tenant', ''), placeFor(tenant, 'user', opts.user_id ?? viewer.subject), opts.version);
    }
    throw new OrchError(Errors.BAD_REQUEST, `target_scope of a demote must be tenant or user (got ${JSON.stringify(target)})`);
  }

  private async move(name: string, from: Place, to: Place, version: string | undefined): Promise<ScopeChangeResult> {
    const moved = await this.db.tx(async (tx) => {
      let rows = (await repo.rowsAt(tx, from, name, true)).sort(byVersionDesc);
      if (version !== undefined) rows = rows.filter((r) => r.version === version);
      if (rows.length === 0) {
        throw notFound(`workflow ${name}${version !== undefined ? ` version ${version}` : ''} is not deployed in ${from.scope} scope`);
      }
      const taken = new Set((await repo.rowsAt(tx, to, name, true)).map((r) => r.version));
      const clash = rows.filter((r) => taken.has(r.version)).map((r) => r.version);
      if (clash.length > 0) {
        throw new OrchError(Errors.CONFLICT, `workflow ${name} already has version ${clash.join(', ')} in ${to.scope} scope; delete it there first`);
      }
      await repo.move(tx, rows.map((r) => r.id), to);
      return rows;
    });
    this.forget(name);
    this.log.info({ workflow: name, from: from.scope, to: to.scope, tenant: to.tenantId, versions: moved.map((r) => r.version) }, 'workflow scope changed');
    return { workflow_id: moved[0]!.id, name, from_scope: from.scope, target_scope: to.scope, versions: moved.map((r) => r.version) };
  }
}
