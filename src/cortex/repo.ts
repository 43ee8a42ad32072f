// SQL of Cortex patterns (migration 011). Every statement names the tenant. Embeddings are JSONB arrays.
import type { Queryable } from '../storage/db.ts';

export interface PatternRow {
  id: string;
  tenant_id: string;
  error_signature: string;
  error_type: string;
  error_message: string;
  solution_approach: string;
  solution_code: string | null;
  tags: string[];
  frequency: number;
  success_count: number;
  failure_count: number;
  embedding: number[];
  embedding_model: string;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `id, tenant_id, error_signature, error_type, error_message, solution_approach, solution_code, tags,
  frequency::float8 AS frequency, success_count::float8 AS success_count, failure_count::float8 AS failure_count,
  embedding, embedding_model, created_at, updated_at`;

function parse(r: PatternRow): PatternRow {
  // PGlite and pg both parse JSONB; a driver that hands back text is tolerated.
  const json = <T>(v: unknown): T => (typeof v === 'string' ? (JSON.parse(v) as T) : (v as T));
  return { ...r, tags: json<string[]>(r.tags), embedding: json<number[]>(r.embedding), frequency: Number(r.frequency), success_count: Number(r.success_count), failure_count: Number(r.failure_count) };
}

/** The tenant's patterns of one embedding model (optionally one error type), most used first, at most `limit`. */
export async function candidates(q: Queryable, tenant: string, model: string, errorType: string | undefined, limit: number): Promise<PatternRow[]> {
  const params: unknown[] = [tenant, model, limit];
  let where = 'tenant_id = $1 AND embedding_model = $2';
  if (errorType !== undefined) {
    params.push(errorType);
    where += ` AND error_type = $${params.length}`;
  }
  const r = await q.query<PatternRow>(`SELECT ${COLUMNS} FROM cortex_patterns WHERE ${where} ORDER BY frequency DESC, id LIMIT $3`, params);
  return r.rows.map(parse);
}

export interface NewPattern {
  id: string;
  tenant: string;
  error_signature: string;
  error_type: string;
  error_message: string;
  solution_approach: string;
  solution_code: string | null;
  tags: string[];
  embedding: number[];
  model: string;
}

export async function insertPattern(q: Queryable, p: NewPattern): Promise<void> {
  await q.query(
    `INSERT INTO cortex_patterns (id, tenant_id, error_signature, error_type, error_message, solution_approach, solution_code, tags,
       frequency, success_count, failure_count, embedding, embedding_model)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, 1, 1, 0, $9::jsonb, $10)`,
    [p.id, p.tenant, p.error_signature, p.error_type, p.error_message, p.solution_approach, p.solution_code, JSON.stringify(p.tags), JSON.stringify(p.embedding), p.model],
  );
}

/** Raises the weight of a pattern (a matching one was stored again: its solution worked once more). */
export async function bumpPattern(q: Queryable, tenant: string, id: string, tags: string[]): Promise<number | undefined> {
  const r = await q.query<{ frequency: number }>(
    `UPDATE cortex_patterns SET frequency = frequency + 1, success_count = success_count + 1, tags = $3::jsonb, updated_at = now()
     WHERE tenant_id = $1 AND id = $2 RETURNING frequency::float8 AS frequency`,
    [tenant, id, JSON.stringify(tags)],
  );
  const f = r.rows[0]?.frequency;
  return f === undefined ? undefined : Number(f);
}

export async function recordOutcome(q: Queryable, tenant: string, id: string, success: boolean): Promise<boolean> {
  const column = success ? 'success_count' : 'failure_count';
  const r = await q.query(`UPDATE cortex_patterns SET ${column} = ${column} + 1, updated_at = now() WHERE tenant_id = $1 AND id = $2`, [tenant, id]);
  return r.rowCount > 0;
}
