// OrchRuntime handlers for executions: ExecuteAgent (server stream of ExecutionEvent until the terminal event) and
// ExecuteSystemCommand. Both call the services that HTTP uses.
import type { ServerUnaryCall, ServerWritableStream, sendUnaryData } from '@grpc/grpc-js';
import { SYSTEM_TENANT } from '../../auth/principal.ts';
import { hasRole } from '../../auth/roles.ts';
import { Errors, OrchError } from '../../errors/catalog.ts';
import type {
  ExecuteAgentRequest,
  ExecuteSystemCommandRequest,
  ExecuteSystemCommandResponse,
  ExecutionEvent,
  OrchRuntimeServer,
} from '../../gen/orch/runtime/v1/runtime.js';
import { toProtoEvent } from '../../agents/execution/events.ts';
import { ExecutionService } from '../../agents/execution/service.ts';
import { runSystemCommand } from '../../agents/system-command.ts';
import type { Logger } from '../../logging/logger.ts';
import { findPrincipal } from './auth.ts';
import { toGrpcError } from './errors.ts';

function tenantOf(call: object): string {
  return findPrincipal(call)?.tenantId ?? SYSTEM_TENANT;
}

export function executionHandlers(executions: ExecutionService, logger: Logger): Partial<OrchRuntimeServer> {
  return {
    executeAgent(call: ServerWritableStream<ExecuteAgentRequest, ExecutionEvent>): void {
      const req = call.request;
      const tenant = tenantOf(call);
      let closed = false;
      void (async () => {
        const { execution_id } = await executions.start({
          tenant,
          agentId: req.agent_id,
          input: req.input,
          contextJson: req.context_json || undefined,
          workflowExecutionId: req.workflow_execution_id || undefined,
        });
        const sub = await executions.follow(tenant, execution_id, (e) => {
          if (closed) return;
          call.write(toProtoEvent(e));
          if (ExecutionService.isTerminalEvent(e)) {
            closed = true;
            call.end();
            void sub?.close().catch(() => undefined);
          }
        });
        call.on('cancelled', () => {
          closed = true;
          void sub.close().catch(() => undefined);
        });
        if (closed) await sub.close();
      })().catch((err: unknown) => {
        if (closed) return;
        closed = true;
        logger.debug({ err }, 'ExecuteAgent failed');
        // emit('error') sends the status; destroy(err) only tore the stream down, and the caller waited for its
        // deadline (issue 14 #8: an unknown agent_id ended in DEADLINE_EXCEEDED instead of NOT_FOUND).
        if (!call.writableEnded && !call.destroyed) call.emit('error', toGrpcError(err));
      });
    },

    executeSystemCommand(
      call: ServerUnaryCall<ExecuteSystemCommandRequest, ExecuteSystemCommandResponse>,
      callback: sendUnaryData<ExecuteSystemCommandResponse>,
    ): void {
      const principal = findPrincipal(call);
      // A shell on the orchestrator host: an authenticated operator only. A node with gRPC authentication turned off
      // has no principal to check, and a root shell must not be open to whoever reaches its port (docs/SECURITY.md).
      if (!principal || !hasRole(principal, 'operator')) {
        const why = principal ? 'ExecuteSystemCommand needs the operator role' : 'ExecuteSystemCommand needs an authenticated operator (gRPC authentication is off on this node)';
        callback(toGrpcError(new OrchError(Errors.FORBIDDEN, why)));
        return;
      }
      const r = call.request;
      if (!r.command) {
        callback(toGrpcError(new OrchError(Errors.BAD_REQUEST, 'command is required')));
        return;
      }
      runSystemCommand({ command: r.command, env: r.env, workdir: r.workdir, timeoutSeconds: r.timeout_seconds })
        .then((res) => callback(null, { exit_code: res.exit_code, stdout: res.stdout, stderr: res.stderr, duration_ms: res.duration_ms }))
        .catch((err: unknown) => callback(toGrpcError(err)));
    },
  };
}
