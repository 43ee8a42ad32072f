// OrchRuntime RunWorkflow (orch addition, issue 16): the gRPC twin of `POST /v1/workflows/{name}/run` with
// `Prefer: wait=N`, through the same WorkflowExecutionService.runAndWait. The caller's tenant and subject come from
// the grpc_auth principal. JSON fields that do not parse, or a blackboard that is not an object, are
// INVALID_ARGUMENT; an unknown workflow NOT_FOUND; a run still going at the wait's end answers `started`.
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { SYSTEM_TENANT } from '../../auth/principal.ts';
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { OrchRuntimeServer, RunWorkflowRequest, RunWorkflowResponse } from '../../gen/orch/runtime/v1/runtime.js';
import type { Logger } from '../../logging/logger.ts';
import { MAX_RUN_WAIT_SECONDS } from '../../workflow/await-end.ts';
import type { RunWaitOutcome, WorkflowExecutionService } from '../../workflow/service.ts';
import { findPrincipal } from './auth.ts';
import { toGrpcError } from './errors.ts';

function jsonField(text: string, name: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new OrchError(Errors.BAD_REQUEST, `${name} is not valid JSON`);
  }
}

function responseOf(out: RunWaitOutcome): RunWorkflowResponse {
  if (out.status === 'started') return { execution_id: out.execution_id, status: out.status, final_output_json: undefined, error: undefined };
  return {
    execution_id: out.execution_id,
    status: out.status,
    final_output_json: JSON.stringify(out.final_output ?? null),
    error: out.error ?? undefined,
  };
}

export function workflowHandlers(runs: WorkflowExecutionService, logger: Logger): Partial<OrchRuntimeServer> {
  const log = logger.child({ component: 'grpc-workflows' });
  return {
    runWorkflow(call: ServerUnaryCall<RunWorkflowRequest, RunWorkflowResponse>, callback: sendUnaryData<RunWorkflowResponse>): void {
      const r = call.request;
      const p = findPrincipal(call);
      const gone = new AbortController();
      call.once('cancelled', () => gone.abort());
      void (async () => {
        const req = {
          tenant: p?.tenantId ?? SYSTEM_TENANT,
          userId: p?.subject,
          workflow: r.workflow,
          version: r.version || undefined,
          input: jsonField(r.input_json, 'input_json'),
          blackboard: jsonField(r.blackboard_json, 'blackboard_json'),
          intent: r.intent,
        };
        const wait = Math.min(r.wait_seconds, MAX_RUN_WAIT_SECONDS);
        return responseOf(wait > 0 ? await runs.runAndWait(req, wait * 1000, gone.signal) : await runs.run(req));
      })().then(
        (res) => callback(null, res),
        (err: unknown) => {
          log.debug({ err }, 'RunWorkflow refused');
          callback(toGrpcError(err));
        },
      );
    },
  };
}
