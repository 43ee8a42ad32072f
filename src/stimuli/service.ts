// StimulusService: the one implementation of stimulus ingestion behind POST /v1/stimuli, POST /v1/webhooks/{source}
// and the IngestStimulus RPC, plus the tenant-scoped list and get. Order (CONTRACT.md): validate; record the
// delivery and take its idempotency key in one transaction (a duplicate stops here, even when the first delivery
// later failed to route); route — stage 1 a direct route of spec.stimuli, stage 2 the router agent; start the
// workflow through WorkflowExecutionService.run (the same path as POST /v1/workflows/{name}/run); record the outcome.
import { randomUUID } from 'node:crypto';
import type { StimulusRoute } from '../config/types.ts';
import { Errors, OrchError, isOrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import type { RunRequest } from '../workflow/service.ts';
import type { StartStimulus } from '../workflow/engine/starts.ts';
import { StimulusError } from './errors.ts';
import { parsedContent, workflowInputFor } from './input.ts';
import { refuseNul } from '../util/no-nul.ts';
import * as repo from './repo.ts';
import type { Classification, StimulusClassifier } from './router.ts';

/** Seed 000: an idempotency key holds for 24 hours. */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 3600;

const SOURCE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const MAX_KEY = 512;

export interface StimuliConfig {
  routes: StimulusRoute[];
  router_agent?: string;
  classification_threshold: number;
  /** When set, a caller that presents roles (a bearer identity; webhooks present none) needs one of these. */
  ingest_roles?: readonly string[];
}

/** The part of WorkflowExecutionService stimuli use. */
export interface WorkflowStarter {
  run(req: RunRequest): Promise<{ execution_id: string }>;
  /** Starts the run and records the stimulus (taking its key) in one committed statement; `duplicate`: the key is
   * held and nothing was written. Throws, writing nothing, when the start is refused. */
  runStimulus?(req: RunRequest, stimulus: StartStimulus): Promise<{ execution_id: string } | { duplicate: true }>;
}

export interface StimulusServiceDeps {
  db: Db;
  runs: WorkflowStarter;
  config: StimuliConfig;
  /** The router agent's model call; absent: stage 2 answers router_error when a router agent is configured. */
  classify?: StimulusClassifier;
  /** Names of the workflows deployed in the tenant (visible to `subject`), offered to the router agent. */
  workflowNames: (tenant: string, subject: string | undefined) => Promise<string[]>;
  logger: Logger;
  ttlSeconds?: number;
}

export interface IngestRequest {
  tenant: string;
  source: unknown;
  content: unknown;
  idempotencyKey?: unknown;
  headers?: unknown;
  /** The caller's subject (user-scoped workflows); absent for webhooks. */
  subject?: string | undefined;
  /** The caller's roles (bearer identities); absent for webhooks, whose HMAC is their authorization. */
  roles?: readonly string[] | undefined;
}

export interface StimulusResult {
  stimulus_id: string;
  workflow_execution_id: string;
}

export interface StimulusView {
  stimulus_id: string;
  tenant_id: string;
  source: string;
  idempotency_key: string | null;
  content: string;
  headers: Record<string, string>;
  status: repo.StimulusStatus;
  routed_by: string | null;
  workflow_name: string | null;
  confidence: number | null;
  workflow_execution_id: string | null;
  error: string | null;
  created_at: string;
  updated_at: string;
}

function viewOf(r: repo.StimulusRow): StimulusView {
  return {
    stimulus_id: r.id,
    tenant_id: r.tenant_id,
    source: r.source,
    idempotency_key: r.idempotency_key,
    content: r.content,
    headers: r.headers,
    status: r.status,
    routed_by: r.routed_by,
    workflow_name: r.workflow_name,
    confidence: r.confidence,
    workflow_execution_id: r.workflow_execution_id,
    error: r.error,
    created_at: new Date(r.created_at).toISOString(),
    updated_at: new Date(r.updated_at).toISOString(),
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function checkHeaders(h: unknown): Record<string, string> {
  if (h === undefined || h === null) return {};
  if (typeof h !== 'object' || Array.isArray(h)) throw new OrchError(Errors.BAD_REQUEST, 'headers must be an object of strings');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    if (typeof v !== 'string') throw new OrchError(Errors.BAD_REQUEST, `header ${k} must be a string`);
    out[k.toLowerCase()] = v;
  }
  return out;
}

interface Route {
  workflow: string;
  input: unknown;
  routedBy: 'route' | 'router_agent';
  confidence?: number;
}

export class StimulusService {
  private readonly log: Logger;
  private readonly ttl: number;

  constructor(private readonly d: StimulusServiceDeps) {
    this.log = d.logger.child({ component: 'stimuli' });
    this.ttl = d.ttlSeconds ?? IDEMPOTENCY_TTL_SECONDS;
  }

  async ingest(req: IngestRequest): Promise<StimulusResult> {
    // Seed 000: PERMISSION_DENIED when the identity is not authorized (spec.stimuli.ingest_roles); nothing written.
    const allowed = this.d.config.ingest_roles;
    if (allowed !== undefined && req.roles !== undefined && !req.roles.some((r) => allowed.includes(r))) {
      throw new OrchError(Errors.FORBIDDEN, `identity is not authorized to ingest stimuli (requires role ${allowed.join(' or ')})`);
    }
    // Validate first: nothing is written for a malformed request.
    if (typeof req.source !== 'string' || req.source === '') throw new OrchError(Errors.BAD_REQUEST, 'source is required');
    if (!SOURCE.test(req.source)) throw new OrchError(Errors.BAD_REQUEST, 'source must be 1-128 characters of A-Z a-z 0-9 . _ : -');
    if (typeof req.content !== 'string') throw new OrchError(Errors.BAD_REQUEST, 'content is required and must be a string');
    const key = req.idempotencyKey === undefined || req.idempotencyKey === null || req.idempotencyKey === '' ? undefined : req.idempotencyKey;
    if (key !== undefined && (typeof key !== 'string' || key.length > MAX_KEY)) {
      throw new OrchError(Errors.BAD_REQUEST, `idempotency_key must be a string of at most ${MAX_KEY} characters`);
    }
    const headers = checkHeaders(req.headers);
    refuseNul(req.content, 'content');
    refuseNul(key, 'idempotency_key');
    refuseNul(headers, 'headers');
    // JSON content becomes the workflow's input (jsonb): an escaped NUL in it (`\u0000`) would fail there.
    refuseNul(parsedContent(req.content), 'content');
    const source = req.source;
    const content = req.content;
    const tenant = req.tenant;
    const id = randomUUID();
    // The run id is chosen now and recorded with the delivery, before the run starts (write before act).
    const executionId = randomUUID();

    // A direct route needs no I/O to decide: the key claim, the stimulus (recorded `routed`) and the workflow run are
    // written in ONE statement, grouped with concurrent starts (engine/starts.ts) and committed before we answer.
    const direct = this.d.config.routes.find((r) => r.source === source);
    let refused: unknown;
    if (direct && this.d.runs.runStimulus) {
      const input = workflowInputFor({ id, source, content, headers }, direct.input_template);
      try {
        const r = await this.d.runs.runStimulus(
          { tenant, workflow: direct.workflow, input, executionId, userId: req.subject },
          { id, source, idempotencyKey: key, content, headers, routedBy: 'route', ttlSeconds: this.ttl },
        );
        if ('duplicate' in r) throw new StimulusError('idempotent_duplicate', { stimulusId: await repo.keyHolder(this.d.db, tenant, source, key ?? '') });
        this.log.info({ stimulus: id, source, workflow: direct.workflow, workflow_execution: executionId, routed_by: 'route' }, 'stimulus routed');
        return { stimulus_id: id, workflow_execution_id: executionId };
      } catch (err) {
        if (err instanceof StimulusError) throw err;
        // An outage (the database gone mid-statement, a pool that cannot connect) is not a refusal: nothing is
        // recorded and the key stays free, so the sender's retry with the same key starts the run. Recording it as a
        // workflow_error would take the key for good with no run behind it (found by the chaos suite: a webhook
        // retried during a PostgreSQL restart was answered idempotent_duplicate and never ran). The one statement
        // either committed — the retry is then a duplicate of a started run — or wrote nothing.
        if (!isOrchError(err) || err.spec.http >= 500) throw err;
        // Refused before anything was written (not deployed, input_schema, ...): recorded below as a workflow_error.
        refused = err;
      }
    }

    // Record the delivery and take its key in one statement: a duplicate (also one racing us) writes nothing.
    const original = await repo.insertStimulus(this.d.db, { id, tenantId: tenant, source, idempotencyKey: key, content, headers, workflowExecutionId: executionId }, this.ttl);
    if (original !== undefined) throw new StimulusError('idempotent_duplicate', { stimulusId: original });

    const view = { id, source, content, headers };
    let route: Route;
    try {
      route = await this.route(tenant, req.subject, view);
    } catch (err) {
      await this.fail(tenant, id, err);
      throw err;
    }
    try {
      if (refused !== undefined) throw refused;
      await this.d.runs.run({ tenant, workflow: route.workflow, input: route.input, executionId, userId: req.subject });
    } catch (err) {
      const reason = isOrchError(err) ? err.message : 'the workflow failed to start';
      if (!isOrchError(err)) this.log.error({ err, stimulus: id }, 'workflow start failed');
      const failure = new StimulusError('workflow_error', { stimulusId: id, reason, cause: err });
      await repo.recordOutcome(this.d.db, tenant, id, { status: 'workflow_error', routedBy: route.routedBy, workflowName: route.workflow, confidence: route.confidence, error: reason });
      throw failure;
    }
    await repo.recordOutcome(this.d.db, tenant, id, {
      status: 'routed',
      routedBy: route.routedBy,
      workflowName: route.workflow,
      confidence: route.confidence,
      workflowExecutionId: executionId,
    });
    this.log.info({ stimulus: id, source, workflow: route.workflow, workflow_execution: executionId, routed_by: route.routedBy }, 'stimulus routed');
    return { stimulus_id: id, workflow_execution_id: executionId };
  }

  private async route(tenant: string, subject: string | undefined, s: { id: string; source: string; content: string; headers: Record<string, string> }): Promise<Route> {
    const direct = this.d.config.routes.find((r) => r.source === s.source);
    if (direct) return { workflow: direct.workflow, input: workflowInputFor(s, direct.input_template), routedBy: 'route' };
    const agent = this.d.config.router_agent;
    if (agent === undefined) throw new StimulusError('no_router_configured', { stimulusId: s.id, reason: `no route for source ${s.source} and no router agent` });
    let c: Classification;
    try {
      if (!this.d.classify) throw new Error('no model call is wired for the router agent on this node');
      const workflows = await this.d.workflowNames(tenant, subject);
      c = await this.d.classify({ tenant, agent, source: s.source, content: s.content, workflows });
    } catch (err) {
      const reason = isOrchError(err) || err instanceof Error ? err.message : 'router agent failed';
      throw new StimulusError('router_error', { stimulusId: s.id, reason: `router agent ${agent}: ${reason}`, cause: err });
    }
    if (c.workflow === undefined || c.confidence < this.d.config.classification_threshold) {
      const reason = c.problem ?? `confidence ${c.confidence} is below the threshold ${this.d.config.classification_threshold}`;
      throw new StimulusError('classification_failed', { stimulusId: s.id, reason });
    }
    return { workflow: c.workflow, input: workflowInputFor(s, undefined), routedBy: 'router_agent', confidence: c.confidence };
  }

  private async fail(tenant: string, id: string, err: unknown): Promise<void> {
    const status = err instanceof StimulusError && (err.stimulusCode === 'classification_failed' || err.stimulusCode === 'no_router_configured' || err.stimulusCode === 'router_error')
      ? err.stimulusCode
      : 'router_error';
    const reason = err instanceof StimulusError ? ((err.details as { reason?: string } | undefined)?.reason ?? err.message) : 'routing failed';
    await repo.recordOutcome(this.d.db, tenant, id, { status, error: reason });
  }

  async get(tenant: string, id: string): Promise<StimulusView> {
    if (!UUID.test(id)) throw new OrchError(Errors.BAD_REQUEST, 'Invalid stimulus ID');
    const row = await repo.getStimulus(this.d.db, tenant, id);
    if (!row) throw new OrchError(Errors.NOT_FOUND, 'Stimulus not found');
    return viewOf(row);
  }

  async list(tenant: string, f: { source?: string | undefined; status?: string | undefined; limit?: number | undefined; offset?: number | undefined } = {}): Promise<StimulusView[]> {
    const limit = Math.min(Math.max(Math.trunc(f.limit ?? 50) || 50, 1), 200);
    const offset = Math.max(Math.trunc(f.offset ?? 0) || 0, 0);
    const rows = await repo.listStimuli(this.d.db, tenant, { source: f.source, status: f.status, limit, offset });
    return rows.map(viewOf);
  }
}
