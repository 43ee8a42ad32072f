// OrchRuntime QueryCortexPatterns and StoreCortexPattern (seed 000) over CortexService, in the caller's tenant
// (service accounts may name one with x-tenant-id). With Cortex disabled (no `cortex` section in the node config)
// both answer FAILED_PRECONDITION `Cortex not configured`. Bad input is INVALID_ARGUMENT.
import { status, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { SYSTEM_TENANT } from '../../auth/principal.ts';
import type { CortexService } from '../../cortex/service.ts';
import { OrchError, type ErrorSpec } from '../../errors/catalog.ts';
import type {
  CortexPattern,
  OrchRuntimeServer,
  QueryCortexRequest,
  QueryCortexResponse,
  StoreCortexPatternRequest,
  StoreCortexPatternResponse,
} from '../../gen/orch/runtime/v1/runtime.js';
import { findPrincipal } from './auth.ts';

const NOT_CONFIGURED: ErrorSpec = { code: 'cortex_not_configured', http: 503, grpc: status.FAILED_PRECONDITION };

export function cortexNotConfigured(): OrchError {
  return new OrchError(NOT_CONFIGURED, 'Cortex not configured on this node (spec.cortex in the node config)');
}

function tenantOf(call: object): string {
  return findPrincipal(call)?.tenantId ?? SYSTEM_TENANT;
}

export function cortexHandlers(cortex: CortexService | undefined): Partial<OrchRuntimeServer> {
  const need = (): CortexService => {
    if (!cortex) throw cortexNotConfigured();
    return cortex;
  };
  return {
    async queryCortexPatterns(call: ServerUnaryCall<QueryCortexRequest, QueryCortexResponse>, callback: sendUnaryData<QueryCortexResponse>): Promise<void> {
      const r = call.request;
      const found = await need().query(tenantOf(call), {
        error_signature: r.error_signature,
        error_type: r.error_type,
        limit: r.limit,
        min_success_score: r.min_success_score,
      });
      const patterns: CortexPattern[] = found.map((p) => ({
        pattern_id: p.pattern_id,
        error_signature: p.error_signature,
        error_type: p.error_type,
        error_message: p.error_message,
        solution_approach: p.solution_approach,
        ...(p.solution_code !== undefined ? { solution_code: p.solution_code } : {}),
        tags: p.tags,
        success_score: p.success_score,
        frequency: p.frequency,
        similarity: p.similarity,
        created_at: p.created_at,
        last_seen_at: p.last_seen_at,
      }));
      callback(null, { patterns });
    },
    async storeCortexPattern(call: ServerUnaryCall<StoreCortexPatternRequest, StoreCortexPatternResponse>, callback: sendUnaryData<StoreCortexPatternResponse>): Promise<void> {
      const r = call.request;
      const res = await need().store(tenantOf(call), {
        error_signature: r.error_signature,
        error_type: r.error_type,
        error_message: r.error_message,
        solution_approach: r.solution_approach,
        solution_code: r.solution_code,
        tags: r.tags,
      });
      callback(null, res);
    },
  };
}
