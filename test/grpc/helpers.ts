// Shared by the gRPC tests: calls any method of a generated client through its service definition, so a test
// can loop over every method of a service, and collects the outcome as status + messages.
import { Metadata, status, type Client, type MethodDefinition, type ServiceDefinition, type ServiceError } from '@grpc/grpc-js';

export interface CallOutcome<Res = unknown> {
  code: status;
  details: string;
  /** Trailing metadata `orch-error-code`, when the server set it. */
  errorCode: string | undefined;
  messages: Res[];
}

function outcomeOf<Res>(err: ServiceError | null, messages: Res[]): CallOutcome<Res> {
  if (!err) return { code: status.OK, details: '', errorCode: undefined, messages };
  const errorCode = err.metadata?.get('orch-error-code')[0];
  return {
    code: err.code,
    details: err.details,
    errorCode: typeof errorCode === 'string' ? errorCode : undefined,
    messages,
  };
}

/** A fully defaulted request message for a method: what decoding zero bytes gives. */
export function emptyRequest<Req, Res>(method: MethodDefinition<Req, Res>): Req {
  return method.requestDeserialize(Buffer.alloc(0));
}

export function call<Req, Res>(
  client: Client,
  method: MethodDefinition<Req, Res>,
  request: Req = emptyRequest(method),
  metadata: Metadata = new Metadata(),
): Promise<CallOutcome<Res>> {
  const deadline = Date.now() + 30_000;
  return new Promise((resolve) => {
    if (!method.responseStream) {
      client.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        request,
        metadata,
        { deadline },
        (err, value) => resolve(outcomeOf(err, value === undefined ? [] : [value])),
      );
      return;
    }
    const messages: Res[] = [];
    const stream = client.makeServerStreamRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      request,
      metadata,
      { deadline },
    );
    stream.on('data', (m: Res) => messages.push(m));
    stream.on('error', (err: ServiceError) => resolve(outcomeOf(err, messages)));
    stream.on('end', () => resolve(outcomeOf(null, messages)));
  });
}

export function methodsOf(definition: ServiceDefinition): [string, MethodDefinition<unknown, unknown>][] {
  // The definition's entries are typed per method; a loop over all of them only needs the common shape.
  return Object.entries(definition);
}

export function bearer(token: string, tenant?: string): Metadata {
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  if (tenant !== undefined) md.set('x-tenant-id', tenant);
  return md;
}
