// SQL of the stimuli tables (migration 012). Every query names the tenant; the key claim is one statement so that
// concurrent deliveries with one key race on the primary key of stimulus_keys, not on a read-then-write.
import type { Queryable } from '../storage/db.ts';

export type StimulusStatus = 'received' | 'routed' | 'classification_failed' | 'no_router_configured' | 'router_error' | 'workflow_error';

export interface StimulusRow {
  id: string;
  tenant_id: string;
  source: string;
  idempotency_key: string | null;
  content: string;
  headers: Record<string, string>;
  status: StimulusStatus;
  routed_by: 'route' | 'router_agent' | null;
  workflow_name: string | null;
  confidence: number | null;
  workflow_execution_id: string | null;
  error: string | null;
  created_at: Date;
  updated_at: Date;
}


export interface NewStimulus {
  id: string;
  tenantId: string;
  source: string;
  idempotencyKey?: string | undefined;
  content: string;
  headers: Record<string, string>;
  /** The id its workflow run will get, recorded before the run starts. */
  workflowExecutionId: string;
}

/**
 * Records a delivery, taking its idempotency key (if any) for `ttlSeconds` in the same statement: the key row's
 * primary key decides which of concurrent deliveries wins, and an expired claim is taken over (ON CONFLICT DO
 * UPDATE ... WHERE expired). Answers undefined when recorded, else the id of the stimulus holding the live claim.
 */
export async function insertStimulus(q: Queryable, s: NewStimulus, ttlSeconds: number): Promise<string | undefined> {
  const row = [s.id, s.tenantId, s.source, s.idempotencyKey ?? null, s.content, JSON.stringify(s.headers), s.workflowExecutionId];
  if (s.idempotencyKey === undefined) {
    await q.query(
      `INSERT INTO stimuli (id, tenant_id, source, idempotency_key, content, headers, status, workflow_execution_id)
       VALUES ($1, $2, $3, $4, $5, $6, 'received', $7)`,
      row,
    );
    return undefined;
  }
  const res = await q.query<{ n: number }>(
    `WITH claim AS (
       INSERT INTO stimulus_keys (tenant_id, source, idempotency_key, stimulus_id, expires_at)
       VALUES ($2, $3, $4, $1, now() + $8::float8 * interval '1 second')
       ON CONFLICT (tenant_id, source, idempotency_key) DO UPDATE
         SET stimulus_id = EXCLUDED.stimulus_id, expires_at = EXCLUDED.expires_at
         WHERE stimulus_keys.expires_at <= now()
       RETURNING stimulus_id
     ), ins AS (
       INSERT INTO stimuli (id, tenant_id, source, idempotency_key, content, headers, status, workflow_execution_id)
       SELECT $1, $2, $3, $4, $5, $6::jsonb, 'received', $7 FROM claim
       RETURNING id
     )
     SELECT count(*)::INT4 AS n FROM ins`,
    [...row, ttlSeconds],
  );
  if ((res.rows[0]?.n ?? 0) > 0) return undefined;
  return keyHolder(q, s.tenantId, s.source, s.idempotencyKey);
}

/** The id of the stimulus holding the key (for idempotent_duplicate). */
export async function keyHolder(q: Queryable, tenantId: string, source: string, key: string): Promise<string> {
  const holder = await q.query<{ stimulus_id: string }>(
    'SELECT stimulus_id FROM stimulus_keys WHERE tenant_id = $1 AND source = $2 AND idempotency_key = $3',
    [tenantId, source, key],
  );
  return holder.rows[0]?.stimulus_id ?? 'unknown';
}

export interface StimulusOutcome {
  status: StimulusStatus;
  routedBy?: 'route' | 'router_agent' | undefined;
  workflowName?: string | undefined;
  confidence?: number | undefined;
  workflowExecutionId?: string | undefined;
  error?: string | undefined;
}

export async function recordOutcome(q: Queryable, tenantId: string, id: string, o: StimulusOutcome): Promise<void> {
  await q.query(
    `UPDATE stimuli SET status = $3, routed_by = $4, workflow_name = $5, confidence = $6, workflow_execution_id = $7,
       error = $8, updated_at = now()
     WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, o.status, o.routedBy ?? null, o.workflowName ?? null, o.confidence ?? null, o.workflowExecutionId ?? null, o.error ?? null],
  );
}

export async function getStimulus(q: Queryable, tenantId: string, id: string): Promise<StimulusRow | undefined> {
  const r = await q.query<StimulusRow>('SELECT * FROM stimuli WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return r.rows[0];
}

export async function listStimuli(
  q: Queryable,
  tenantId: string,
  f: { source?: string | undefined; status?: string | undefined; limit: number; offset: number },
): Promise<StimulusRow[]> {
  const r = await q.query<StimulusRow>(
    `SELECT * FROM stimuli
     WHERE tenant_id = $1 AND ($2::text IS NULL OR source = $2) AND ($3::text IS NULL OR status = $3)
     ORDER BY created_at DESC, id LIMIT $4 OFFSET $5`,
    [tenantId, f.source ?? null, f.status ?? null, f.limit, f.offset],
  );
  return r.rows;
}
