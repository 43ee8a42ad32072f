// OrchRuntime AttestAgent and InvokeTool (seed 000 "gRPC: OrchRuntime", rules 1-3). Both authenticate by SEAL,
// not by a bearer: the node lists them in grpc_auth's exempt methods (SEAL_EXEMPT_METHODS). InvokeTool answers OK
// with result_json = the JSON-RPC body for a 200 (tool-level failures included, isError true); any refusal is a
// gRPC status (PERMISSION_DENIED for policy and inactive sessions, UNAUTHENTICATED, INVALID_ARGUMENT, INTERNAL)
// whose trailing metadata `seal-result-bin` carries the same JSON-RPC error body.
import { Metadata, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import type {
  AttestAgentRequest,
  AttestAgentResponse,
  InvokeToolRequest,
  InvokeToolResponse,
  OrchRuntimeServer,
} from '../../gen/orch/runtime/v1/runtime.js';
import type { Logger } from '../../logging/logger.ts';
import { RESULT_METADATA_KEY } from '../../seal/client.ts';
import { envelopeFromGrpc, EnvelopeError } from '../../seal/envelope.ts';
import type { SealService } from '../../seal/service.ts';
import { toGrpcError } from './errors.ts';

/** Full method paths of the SEAL RPCs, exempt from bearer auth on every node (agents hold no bearer). */
export const SEAL_EXEMPT_METHODS: readonly string[] = ['/orch.runtime.v1.OrchRuntime/AttestAgent', '/orch.runtime.v1.OrchRuntime/InvokeTool'];

export function sealHandlers(seal: SealService, logger: Logger): Partial<OrchRuntimeServer> {
  const log = logger.child({ component: 'grpc-seal' });
  return {
    attestAgent(call: ServerUnaryCall<AttestAgentRequest, AttestAgentResponse>, callback: sendUnaryData<AttestAgentResponse>): void {
      const r = call.request;
      seal
        .attest({ agent_id: r.agent_id, execution_id: r.execution_id, container_id: r.container_id, public_key: r.public_key_pem })
        .then((res) => callback(null, { security_token: res.security_token }))
        .catch((err: unknown) => {
          log.debug({ err }, 'AttestAgent refused');
          callback(toGrpcError(err));
        });
    },

    invokeTool(call: ServerUnaryCall<InvokeToolRequest, InvokeToolResponse>, callback: sendUnaryData<InvokeToolResponse>): void {
      let envelope;
      try {
        envelope = envelopeFromGrpc(call.request);
      } catch (err) {
        envelope = err instanceof EnvelopeError ? err : new EnvelopeError('malformed envelope');
      }
      void seal.invoke(envelope).then((res) => {
        const bytes = Buffer.from(JSON.stringify(res.body), 'utf8');
        if (res.httpStatus === 200) return callback(null, { result_json: bytes });
        const metadata = new Metadata();
        metadata.set(RESULT_METADATA_KEY, bytes);
        const message = 'error' in res.body ? res.body.error.message : 'refused';
        callback(Object.assign(new Error(message), { code: res.grpcStatus, details: message, metadata }));
      }, (err: unknown) => callback(toGrpcError(err)));
    },
  };
}
