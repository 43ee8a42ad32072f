// OrchRuntime ValidateWithJudges (seed 000) over JudgeService (docs/JUDGES.md), in the caller's tenant (service
// accounts may name one with x-tenant-id). Statuses: INVALID_ARGUMENT for a malformed request (no judges, a bad
// strategy, threshold, weight, template or context_json); NOT_FOUND when a judge agent is not deployed;
// UNAVAILABLE on a node that runs no agent executions. Fewer than min_judges_required judges with a valid verdict
// is an answer, not an error: binary_valid false, score and confidence 0, the shortfall in `reasoning`. A cancelled
// call (deadline exceeded, client gone) cancels the judge executions that are still running.
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { SYSTEM_TENANT } from '../../auth/principal.ts';
import type { OrchRuntimeServer, ValidateRequest, ValidateResponse } from '../../gen/orch/runtime/v1/runtime.js';
import type { JudgeService } from '../../judges/service.ts';
import type { Logger } from '../../logging/logger.ts';
import { findPrincipal } from './auth.ts';

export function judgeHandlers(judges: JudgeService, logger: Logger): Partial<OrchRuntimeServer> {
  const log = logger.child({ component: 'grpc-judges' });
  return {
    async validateWithJudges(call: ServerUnaryCall<ValidateRequest, ValidateResponse>, callback: sendUnaryData<ValidateResponse>): Promise<void> {
      const r = call.request;
      const tenant = findPrincipal(call)?.tenantId ?? SYSTEM_TENANT;
      const c = r.consensus;
      // A cancelled call (deadline, client gone) cancels the judge executions still running.
      const cancelled = new AbortController();
      call.on('cancelled', () => cancelled.abort());
      const res = await judges.validate(tenant, {
        output: r.output,
        task: r.task,
        judges: r.judges.map((j) => ({ agent_id: j.agent_id, input_template: j.input_template, weight: j.weight })),
        ...(c
          ? { consensus: { strategy: c.strategy, threshold: c.threshold, agreement: c.agreement, n: c.n, min_judges_required: c.min_judges_required } }
          : {}),
        context_json: r.context_json,
      }, cancelled.signal);
      log.debug({ tenant, judges: r.judges.length, score: res.score, valid: res.binary_valid }, 'ValidateWithJudges');
      callback(null, {
        score: res.score,
        confidence: res.confidence,
        reasoning: res.reasoning,
        binary_valid: res.binary_valid,
        individual_results: res.individual_results.map((v) => ({
          agent_id: v.agent_id,
          score: v.score,
          confidence: v.confidence,
          reasoning: v.reasoning,
          binary_valid: v.binary_valid,
          weight: v.weight,
          execution_id: v.execution_id,
          ...(v.error !== undefined ? { error: v.error } : {}),
        })),
      });
    },
  };
}
