// OrchRuntime IngestStimulus (seed 000): the StimulusService that POST /v1/stimuli uses, in the caller's tenant
// (service accounts may name one with x-tenant-id; rule 4). Status codes: OK; ALREADY_EXISTS for a duplicate key,
// with the original stimulus id in the message and in trailing metadata `orch-stimulus-id`; INVALID_ARGUMENT for
// classification_failed and no_router_configured; INTERNAL for router_error and workflow_error. The catalogue code
// (`idempotent_duplicate`, ...) is in metadata `orch-error-code`.
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { SYSTEM_TENANT } from '../../auth/principal.ts';
import type { IngestStimulusRequest, IngestStimulusResponse, OrchRuntimeServer } from '../../gen/orch/runtime/v1/runtime.js';
import type { Logger } from '../../logging/logger.ts';
import { StimulusError } from '../../stimuli/errors.ts';
import type { StimulusService } from '../../stimuli/service.ts';
import { findPrincipal } from './auth.ts';
import { toGrpcError } from './errors.ts';

export const STIMULUS_ID_METADATA_KEY = 'orch-stimulus-id';

export function stimulusHandlers(stimuli: StimulusService, logger: Logger): Partial<OrchRuntimeServer> {
  const log = logger.child({ component: 'grpc-stimuli' });
  return {
    ingestStimulus(call: ServerUnaryCall<IngestStimulusRequest, IngestStimulusResponse>, callback: sendUnaryData<IngestStimulusResponse>): void {
      const r = call.request;
      const p = findPrincipal(call);
      stimuli
        .ingest({
          tenant: p?.tenantId ?? SYSTEM_TENANT,
          subject: p?.subject,
          roles: p?.roles,
          source: r.source_name,
          content: r.content,
          idempotencyKey: r.idempotency_key,
          headers: r.headers,
        })
        .then((res) => callback(null, res))
        .catch((err: unknown) => {
          const status = toGrpcError(err);
          if (err instanceof StimulusError && err.stimulusId !== undefined) {
            status.metadata?.set(STIMULUS_ID_METADATA_KEY, err.stimulusId);
            if (err.stimulusCode === 'idempotent_duplicate') status.details = `idempotent_duplicate: original stimulus ${err.stimulusId}`;
          }
          log.debug({ err }, 'IngestStimulus refused');
          callback(status);
        });
    },
  };
}
