// The stimulus and webhook error codes of seed 000. Each is an OrchError whose message — and, for gRPC, whose
// `orch-error-code` metadata — is the code itself, so HTTP answers {"error": "<code>"} (CONTRACT.md) and gRPC
// callers can tell the rows apart. A duplicate carries the id of the original stimulus.
import { Errors, OrchError, type ErrorSpec } from '../errors/catalog.ts';

export const StimulusErrors = {
  idempotent_duplicate: Errors.CONFLICT, // 409, ALREADY_EXISTS
  classification_failed: Errors.VALIDATION, // 422, INVALID_ARGUMENT
  no_router_configured: Errors.VALIDATION, // 422, INVALID_ARGUMENT
  router_error: Errors.INTERNAL, // 500, INTERNAL (the router agent failed)
  workflow_error: Errors.INTERNAL, // 500, INTERNAL
  missing_signature: Errors.UNAUTHENTICATED, // 401
  malformed_signature: Errors.BAD_REQUEST, // 400
  secret_not_found: Errors.UNAUTHENTICATED, // 401
  invalid_signature: Errors.UNAUTHENTICATED, // 401
} as const satisfies Record<string, ErrorSpec>;

export type StimulusErrorCode = keyof typeof StimulusErrors;

export class StimulusError extends OrchError {
  readonly stimulusCode: StimulusErrorCode;
  /** The stimulus this failure belongs to (for a duplicate: the original one); absent before one was recorded. */
  readonly stimulusId: string | undefined;

  constructor(code: StimulusErrorCode, o: { stimulusId?: string | undefined; reason?: string | undefined; cause?: unknown } = {}) {
    const details: Record<string, unknown> = {};
    if (o.stimulusId !== undefined) details.stimulus_id = o.stimulusId;
    if (o.reason !== undefined) details.reason = o.reason;
    super(StimulusErrors[code], code, { details: Object.keys(details).length > 0 ? details : undefined, cause: o.cause });
    this.name = 'StimulusError';
    this.stimulusCode = code;
    this.stimulusId = o.stimulusId;
  }

  override get code(): string {
    return this.stimulusCode;
  }
}
