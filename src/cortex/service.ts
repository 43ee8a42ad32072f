// Cortex memory (docs/CORTEX.md): error-to-solution patterns per tenant. Store deduplicates: a pattern of the same
// tenant and error type whose embedding is at least `dedup_threshold` similar has its weight (frequency) raised in
// one statement instead of a new row being written. Query ranks the tenant's candidates by similarity combined with
// the success score. Similarity is computed here over the tenant's candidate set (at most `max_candidates` rows),
// which keeps the SQL portable across PostgreSQL, PGlite and CockroachDB; see the doc for the scale this suits.
import { randomUUID } from 'node:crypto';
import type { CortexConfig } from '../config/types.ts';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import { KeyedMutex } from '../volumes/mutex.ts';
import { cosine, embeddingProviderFromConfig, type EmbeddingProvider } from './embedding.ts';
import * as repo from './repo.ts';

export const DEFAULT_DEDUP_THRESHOLD = 0.72;
export const DEFAULT_MAX_CANDIDATES = 20_000;
/** Query answers leave out patterns less similar than this. */
export const MIN_QUERY_SIMILARITY = 0.3;
export const DEFAULT_QUERY_LIMIT = 10;
export const MAX_QUERY_LIMIT = 100;

export interface StorePatternInput {
  error_signature: string;
  error_type: string;
  error_message: string;
  solution_approach: string;
  solution_code?: string | undefined;
  tags?: string[] | undefined;
}

export interface StorePatternResult {
  pattern_id: string;
  deduplicated: boolean;
  new_frequency: number;
}

export interface QueryPatternsInput {
  error_signature: string;
  error_type?: string | undefined;
  limit?: number | undefined;
  min_success_score?: number | undefined;
}

export interface CortexPatternView {
  pattern_id: string;
  error_signature: string;
  error_type: string;
  error_message: string;
  solution_approach: string;
  solution_code?: string;
  tags: string[];
  success_score: number;
  frequency: number;
  similarity: number;
  /** similarity × (0.8 + 0.2 × success_score): the order of the answer. */
  rank: number;
  created_at: string;
  last_seen_at: string;
}

const LIMITS = { error_signature: 8192, error_type: 256, error_message: 16384, solution_approach: 16384, solution_code: 262144 } as const;

function text(v: unknown, name: keyof typeof LIMITS, required: boolean): string {
  if (v === undefined || v === null) v = '';
  if (typeof v !== 'string') throw new OrchError(Errors.BAD_REQUEST, `${name} must be a string`);
  if (required && v.trim() === '') throw new OrchError(Errors.BAD_REQUEST, `${name} is required`);
  if (v.length > LIMITS[name]) throw new OrchError(Errors.BAD_REQUEST, `${name} is longer than ${LIMITS[name]} characters`);
  return v;
}

function tagsOf(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((t) => typeof t !== 'string' || t === '' || t.length > 64)) {
    throw new OrchError(Errors.BAD_REQUEST, 'tags must be non-empty strings of at most 64 characters');
  }
  if (v.length > 32) throw new OrchError(Errors.BAD_REQUEST, 'at most 32 tags');
  return [...new Set(v as string[])];
}

export function successScore(r: Pick<repo.PatternRow, 'success_count' | 'failure_count'>): number {
  const total = r.success_count + r.failure_count;
  return total > 0 ? r.success_count / total : 0;
}

/** The text a pattern is embedded from, and the one a query is (same layout, so both compare alike). */
export function patternText(errorType: string, signature: string, message: string): string {
  return `${errorType}\n${signature}\n${message}`;
}

export class CortexService {
  readonly embeddings: EmbeddingProvider;
  readonly dedupThreshold: number;
  private readonly maxCandidates: number;
  private readonly mutex = new KeyedMutex();

  constructor(
    private readonly db: Db,
    config: CortexConfig,
    private readonly logger: Logger,
    embeddings?: EmbeddingProvider,
  ) {
    this.embeddings = embeddings ?? embeddingProviderFromConfig(config);
    this.dedupThreshold = config.dedup_threshold ?? DEFAULT_DEDUP_THRESHOLD;
    this.maxCandidates = config.max_candidates ?? DEFAULT_MAX_CANDIDATES;
  }

  private async embedOne(t: string): Promise<number[]> {
    try {
      const [v] = await this.embeddings.embed([t]);
      if (!v) throw new Error('no vector');
      return v;
    } catch (err) {
      this.logger.warn({ err, model: this.embeddings.model }, 'embedding failed');
      throw new OrchError(Errors.UNAVAILABLE, `embedding provider failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }

  async store(tenant: string, input: StorePatternInput): Promise<StorePatternResult> {
    const p = {
      error_signature: text(input.error_signature, 'error_signature', true),
      error_type: text(input.error_type, 'error_type', true).trim(),
      error_message: text(input.error_message, 'error_message', false),
      solution_approach: text(input.solution_approach, 'solution_approach', true),
      solution_code: input.solution_code === undefined || input.solution_code === '' ? null : text(input.solution_code, 'solution_code', false),
      tags: tagsOf(input.tags),
    };
    // Embedding (possibly a remote call) happens before the transaction, so a retried transaction repeats no I/O.
    const embedding = await this.embedOne(patternText(p.error_type, p.error_signature, p.error_message));
    const model = this.embeddings.model;
    // One store per tenant and error type at a time on this node, so two near-identical stores arriving together
    // do not both insert; across nodes that race can leave two rows, which later stores then both match.
    return this.mutex.run(`${tenant}\u0000${p.error_type}`, () =>
      this.db.tx(async (tx) => {
        const rows = await repo.candidates(tx, tenant, model, p.error_type, this.maxCandidates);
        let best: { row: repo.PatternRow; sim: number } | undefined;
        for (const row of rows) {
          const sim = cosine(embedding, row.embedding);
          if (!best || sim > best.sim) best = { row, sim };
        }
        if (best && best.sim >= this.dedupThreshold) {
          const tags = [...new Set([...best.row.tags, ...p.tags])].slice(0, 32);
          const frequency = await repo.bumpPattern(tx, tenant, best.row.id, tags);
          if (frequency !== undefined) return { pattern_id: best.row.id, deduplicated: true, new_frequency: frequency };
        }
        const id = randomUUID();
        await repo.insertPattern(tx, { id, tenant, ...p, embedding, model });
        return { pattern_id: id, deduplicated: false, new_frequency: 1 };
      }),
    );
  }

  async query(tenant: string, input: QueryPatternsInput): Promise<CortexPatternView[]> {
    const signature = text(input.error_signature, 'error_signature', true);
    const errorType = input.error_type === undefined || input.error_type === '' ? undefined : text(input.error_type, 'error_type', false).trim();
    const limit = input.limit === undefined || input.limit === 0 ? DEFAULT_QUERY_LIMIT : input.limit;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_QUERY_LIMIT) throw new OrchError(Errors.BAD_REQUEST, `limit must be an integer between 1 and ${MAX_QUERY_LIMIT}`);
    const minSuccess = input.min_success_score ?? 0;
    if (!(minSuccess >= 0 && minSuccess <= 1)) throw new OrchError(Errors.BAD_REQUEST, 'min_success_score must be between 0.0 and 1.0');
    const embedding = await this.embedOne(patternText(errorType ?? '', signature, ''));
    const rows = await repo.candidates(this.db, tenant, this.embeddings.model, errorType, this.maxCandidates);
    const out: CortexPatternView[] = [];
    for (const r of rows) {
      const success = successScore(r);
      // Scores are floats on the wire (proto float32): compare with a little slack.
      if (success < minSuccess - 1e-6) continue;
      const similarity = cosine(embedding, r.embedding);
      if (similarity < MIN_QUERY_SIMILARITY) continue;
      out.push({
        pattern_id: r.id,
        error_signature: r.error_signature,
        error_type: r.error_type,
        error_message: r.error_message,
        solution_approach: r.solution_approach,
        ...(r.solution_code !== null ? { solution_code: r.solution_code } : {}),
        tags: r.tags,
        success_score: success,
        frequency: r.frequency,
        similarity,
        rank: similarity * (0.8 + 0.2 * success),
        created_at: new Date(r.created_at).toISOString(),
        last_seen_at: new Date(r.updated_at).toISOString(),
      });
    }
    out.sort((a, b) => b.rank - a.rank || b.frequency - a.frequency || a.pattern_id.localeCompare(b.pattern_id));
    return out.slice(0, limit);
  }

  /** Records whether applying a pattern's solution worked (the success score's evidence). */
  async recordOutcome(tenant: string, patternId: string, success: boolean): Promise<void> {
    if (!(await repo.recordOutcome(this.db, tenant, patternId, success))) throw new OrchError(Errors.NOT_FOUND, 'pattern not found');
  }
}
