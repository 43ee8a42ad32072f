// AgentService: the agent registry, one implementation behind HTTP (and later gRPC and the orch.agent.* tools).
// Validate first, then write in one transaction. Every query is scoped by the caller's tenant.
//
// Identity and versions: an agent is a name within a tenant with a stable `agent_id`; each deployed version is kept.
// The current version is the one deployed last (also when an older version number is forced again); it is what
// runs when no version is asked for.
//   deploy  creates the agent or adds a version; an existing name+version is 409 unless `force`, which replaces
//           that version's manifest in place (same agent_id) and makes it current.
//   update  the same for an agent that must already exist (PUT /v1/agents/{id}); the manifest's metadata.name must
//           be the agent's name. A new version number adds a version; the same number needs `force`.
//   remove  deletes the agent with all its versions, or one version (the newest remaining becomes current; the
//           last one removed removes the agent).
// Scopes: `tenant` (default) is seen by everyone in the tenant; `user` only by its owner (the deploying subject);
// `global` by every tenant, deployed, updated and removed only by an operator (stored in tenant `orch-system`). A
// tenant's own agent shadows a global agent of the same name. A name is unique within a tenant whatever the scope,
// and the scope of an existing agent is not changed by redeploying it.
import { randomUUID } from 'node:crypto';
import type { Role, Viewer } from '../auth/principal.ts';
import { SYSTEM_TENANT } from '../auth/principal.ts';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import { parseAgentManifest } from './manifest/parse.ts';
import type { AgentManifest, ManifestError } from './manifest/types.ts';
import * as repo from './repo.ts';
import type { AgentRow, AgentScope, VersionRow } from './repo.ts';

export type { AgentScope } from './repo.ts';

export const AGENT_NOT_FOUND = 'Agent not found';
export const SCOPES: readonly AgentScope[] = ['user', 'tenant', 'global'];

/** 422: the manifest did not validate; `errors` name each field. */
export class AgentManifestInvalid extends OrchError {
  readonly errors: ManifestError[];
  constructor(errors: ManifestError[]) {
    super(Errors.VALIDATION, 'invalid agent manifest', { details: errors });
    this.name = 'AgentManifestInvalid';
    this.errors = errors;
  }
}

/** Who asks: the subject (for user-scoped agents) and roles (operator for global ones). */
export type { Viewer };

export interface DeployRequest {
  tenant: string;
  subject: string;
  roles?: readonly Role[];
  yaml: string;
  force?: boolean;
  /** Default: the existing agent's scope, or `tenant` for a new one. */
  scope?: AgentScope;
}

export interface DeployResult {
  agent_id: string;
  name: string;
  version: string;
  /** true when this made a new agent; false when it added or replaced a version. */
  created: boolean;
  /** true when `force` replaced an existing name and version. */
  replaced: boolean;
}

export interface AgentSummary {
  agent_id: string;
  name: string;
  tenant_id: string;
  version: string;
  scope: AgentScope;
  owner_subject: string;
  description: string | null;
  labels: Record<string, string>;
  status: string;
  created_at: string;
  updated_at: string;
}

export interface AgentDetail extends AgentSummary {
  manifest: AgentManifest;
  manifest_yaml: string;
}

export interface AgentVersionInfo {
  version: string;
  current: boolean;
  deployed_by: string;
  created_at: string;
  updated_at: string;
}

export interface AgentManifestRecord {
  agent_id: string;
  name: string;
  version: string;
  manifest: AgentManifest;
  manifest_yaml: string;
}

function iso(v: Date | string): string {
  return (v instanceof Date ? v : new Date(v)).toISOString();
}

function summary(a: AgentRow): AgentSummary {
  return {
    agent_id: a.id,
    name: a.name,
    tenant_id: a.tenant_id,
    version: a.current_version,
    scope: a.scope,
    owner_subject: a.owner_subject,
    description: a.description,
    labels: a.labels ?? {},
    status: a.status,
    created_at: iso(a.created_at),
    updated_at: iso(a.updated_at),
  };
}

function isOperator(roles: readonly Role[] | undefined): boolean {
  return roles?.includes('operator') ?? false;
}

function notFound(): OrchError {
  return new OrchError(Errors.NOT_FOUND, AGENT_NOT_FOUND);
}

function parseOrThrow(yaml: string): AgentManifest {
  const parsed = parseAgentManifest(yaml);
  if (!parsed.ok) throw new AgentManifestInvalid(parsed.errors);
  return parsed.manifest;
}

function conflict(name: string, version: string): OrchError {
  return new OrchError(Errors.CONFLICT, `agent ${name} version ${version} already exists; increment metadata.version or use force to overwrite it`);
}

/** An agent whose current version changed (deploy, update): what the Cortex search index embeds. */
export interface AgentDeployed {
  /** The tenant that holds it (`orch-system` for a global agent). */
  tenant_id: string;
  agent_id: string;
  name: string;
  description: string | null;
  labels: Record<string, string>;
}

export class AgentService {
  private readonly log: Logger;
  private readonly deployListeners: ((e: AgentDeployed) => Promise<void>)[] = [];

  /** Called after each committed deploy or update (the Cortex search index, node.ts); a failing listener is logged. */
  onDeployed(fn: (e: AgentDeployed) => Promise<void>): void {
    this.deployListeners.push(fn);
  }

  private async deployed(e: AgentDeployed): Promise<void> {
    for (const fn of this.deployListeners) await fn(e).catch((err: unknown) => this.log.warn({ err, agent_id: e.agent_id }, 'deploy listener failed'));
  }

  constructor(
    private readonly db: Db,
    logger: Logger,
  ) {
    this.log = logger.child({ component: 'agents' });
  }

  /** Validates and stores a manifest: a new agent, a new version, or (force) a replaced version. */
  async deploy(req: DeployRequest): Promise<DeployResult> {
    if (req.scope !== undefined && !SCOPES.includes(req.scope)) {
      throw new OrchError(Errors.BAD_REQUEST, `scope must be one of ${SCOPES.join(', ')}`);
    }
    const manifest = parseOrThrow(req.yaml);
    if (req.scope === 'global' && !isOperator(req.roles)) throw new OrchError(Errors.FORBIDDEN, 'only an operator may deploy a global agent');
    const { name, version } = manifest.metadata;
    const partition = req.scope === 'global' ? SYSTEM_TENANT : req.tenant;
    const description = manifest.metadata.description ?? null;
    const labels = manifest.metadata.labels ?? null;
    const result = await this.db.tx(async (tx) => {
      const created = await repo.insertAgentIfAbsent(tx, {
        id: randomUUID(),
        tenantId: partition,
        name,
        scope: req.scope ?? 'tenant',
        owner: req.subject,
        version,
        description,
        labels,
      });
      const agent = await repo.lockByName(tx, partition, name);
      if (!agent) throw new OrchError(Errors.INTERNAL, `agent ${name} vanished while being deployed`);
      if (!created) {
        if (req.scope !== undefined && req.scope !== agent.scope) {
          throw new OrchError(Errors.CONFLICT, `agent ${name} already exists with scope ${agent.scope}; its scope is not changed by a deploy`);
        }
        if (agent.scope === 'user' && agent.owner_subject !== req.subject) {
          throw new OrchError(Errors.CONFLICT, `the name ${name} is taken by another user's agent in this tenant`);
        }
        if (agent.scope === 'global' && !isOperator(req.roles)) throw new OrchError(Errors.FORBIDDEN, 'only an operator may change a global agent');
      }
      const existing = created ? undefined : await repo.getVersion(tx, agent.id, version);
      if (existing && !req.force) throw conflict(name, version);
      await repo.putVersion(tx, { agentId: agent.id, tenantId: partition, name, version, yaml: req.yaml, manifest, by: req.subject }, existing !== undefined);
      await repo.setCurrent(tx, agent.id, version, description, labels);
      return { agent_id: agent.id, name, version, created, replaced: existing !== undefined };
    });
    this.log.info({ tenant: partition, agent: name, version, agent_id: result.agent_id, created: result.created, replaced: result.replaced }, 'agent deployed');
    await this.deployed({ tenant_id: partition, agent_id: result.agent_id, name, description, labels: labels ?? {} });
    return result;
  }

  /** The tenant's agents plus the global ones (user-scoped ones only for their owner), by name. */
  async list(tenant: string, viewer?: Viewer): Promise<AgentSummary[]> {
    const rows = await repo.listVisible(this.db, tenant, viewer?.subject);
    // A tenant's own agent shadows a global one of the same name.
    const own = new Set(rows.filter((r) => r.tenant_id === tenant).map((r) => r.name));
    return rows.filter((r) => r.tenant_id === tenant || !own.has(r.name)).map(summary);
  }

  /** GET /v1/agents/lookup/{name}: 404 `Agent not found` when the tenant (or global scope) has no such name. */
  async lookup(tenant: string, name: string, viewer?: Viewer): Promise<AgentSummary> {
    const row = await repo.findVisible(this.db, tenant, viewer?.subject, name);
    if (!row || row.name !== name) throw notFound();
    return summary(row);
  }

  /** The agent with its current version's manifest, or the manifest of `version` (the dashboard's definitions view). */
  async get(tenant: string, idOrName: string, viewer?: Viewer, version?: string): Promise<AgentDetail> {
    if (version !== undefined && (version.length === 0 || version.length > 128)) throw new OrchError(Errors.BAD_REQUEST, 'version must be 1 to 128 characters');
    const row = await this.resolve(tenant, idOrName, viewer);
    const v = await repo.getVersion(this.db, row.id, version ?? row.current_version);
    if (!v) throw version === undefined ? notFound() : new OrchError(Errors.NOT_FOUND, `agent ${row.name} has no version ${version}`);
    return { ...summary(row), version: v.version, manifest: v.manifest as AgentManifest, manifest_yaml: v.manifest_yaml };
  }

  /**
   * What the execution engine runs: the manifest of `version`, or of the current version. `agentId` may also be a
   * name. The engine acts for the tenant, so user-scoped agents of the tenant are included.
   */
  async getManifest(tenant: string, agentId: string, version?: string): Promise<AgentManifestRecord> {
    // One statement: every execution start comes here (issue 24).
    const row = await repo.findVisibleManifest(this.db, tenant, undefined, agentId, version);
    if (!row) throw notFound();
    if (row.v_version === null) throw new OrchError(Errors.NOT_FOUND, version === undefined ? AGENT_NOT_FOUND : `agent ${row.name} has no version ${version}`);
    return { agent_id: row.id, name: row.name, version: row.v_version, manifest: row.v_manifest as AgentManifest, manifest_yaml: row.v_manifest_yaml ?? '' };
  }

  /** For semantic validation rules: the judge agent's current manifest, by name. */
  async manifestByName(tenant: string, name: string): Promise<AgentManifest> {
    return (await this.getManifest(tenant, name)).manifest;
  }

  /** PUT /v1/agents/{id}: a new version of an existing agent (or, with force, the same version replaced). */
  async update(tenant: string, idOrName: string, yaml: string, opts: { subject: string; roles?: readonly Role[]; force?: boolean }): Promise<DeployResult> {
    const row = await this.resolve(tenant, idOrName, opts);
    this.mayChange(row, opts);
    const manifest = parseOrThrow(yaml);
    const { name, version } = manifest.metadata;
    if (name !== row.name) {
      throw new AgentManifestInvalid([{ field: 'metadata.name', message: `must be ${row.name}, the name of the agent being updated` }]);
    }
    const description = manifest.metadata.description ?? null;
    const labels = manifest.metadata.labels ?? null;
    const result = await this.db.tx(async (tx) => {
      const agent = await repo.lockById(tx, row.id);
      if (!agent) throw notFound();
      const existing = await repo.getVersion(tx, agent.id, version);
      if (existing && !opts.force) throw conflict(name, version);
      await repo.putVersion(tx, { agentId: agent.id, tenantId: agent.tenant_id, name, version, yaml, manifest, by: opts.subject }, existing !== undefined);
      await repo.setCurrent(tx, agent.id, version, description, labels);
      return { agent_id: agent.id, name, version, created: false, replaced: existing !== undefined };
    });
    this.log.info({ tenant: row.tenant_id, agent: name, version, agent_id: row.id, replaced: result.replaced }, 'agent updated');
    await this.deployed({ tenant_id: row.tenant_id, agent_id: row.id, name, description, labels: labels ?? {} });
    return result;
  }

  /** Deletes the agent and every version, or only `version`. */
  async remove(tenant: string, idOrName: string, viewer: Viewer, version?: string): Promise<{ agent_id: string; deleted: true; version?: string }> {
    const row = await this.resolve(tenant, idOrName, viewer);
    this.mayChange(row, viewer);
    await this.db.tx(async (tx) => {
      const agent = await repo.lockById(tx, row.id);
      if (!agent) throw notFound();
      if (version === undefined) {
        await repo.deleteAgent(tx, agent.id);
        return;
      }
      if ((await repo.deleteVersion(tx, agent.id, version)) === 0) throw new OrchError(Errors.NOT_FOUND, `agent ${agent.name} has no version ${version}`);
      const rest = await repo.listVersions(tx, agent.id);
      if (rest.length === 0) await repo.deleteAgent(tx, agent.id);
      else if (agent.current_version === version) {
        const next = rest[0]!;
        const m = next.manifest as AgentManifest;
        await repo.setCurrent(tx, agent.id, next.version, m.metadata.description ?? null, m.metadata.labels ?? null);
      }
    });
    this.log.info({ tenant: row.tenant_id, agent: row.name, agent_id: row.id, version }, 'agent deleted');
    return { agent_id: row.id, deleted: true, ...(version !== undefined ? { version } : {}) };
  }

  /** Every kept version, most recently deployed first. */
  async versions(tenant: string, idOrName: string, viewer?: Viewer): Promise<{ agent_id: string; name: string; versions: AgentVersionInfo[] }> {
    const row = await this.resolve(tenant, idOrName, viewer);
    const versions = (await repo.listVersions(this.db, row.id)).map((v: VersionRow) => ({
      version: v.version,
      current: v.version === row.current_version,
      deployed_by: v.deployed_by,
      created_at: iso(v.created_at),
      updated_at: iso(v.updated_at),
    }));
    return { agent_id: row.id, name: row.name, versions };
  }

  private async resolve(tenant: string, idOrName: string, viewer: Viewer | undefined): Promise<AgentRow> {
    const row = await repo.findVisible(this.db, tenant, viewer?.subject, idOrName);
    if (!row) throw notFound();
    return row;
  }

  private mayChange(row: AgentRow, viewer: Viewer): void {
    if (row.scope === 'global' && !isOperator(viewer.roles)) throw new OrchError(Errors.FORBIDDEN, 'only an operator may change a global agent');
  }
}
