// Wraps every handler of a service so that (1) an optional gate (auth, envelope checks) runs before it and may
// refuse the call, and (2) whatever the gate or the handler throws or rejects with becomes a gRPC status via
// toGrpcError, for unary and streaming calls alike. Handlers may therefore be async and simply throw OrchError.
import type {
  ServerDuplexStream,
  ServerReadableStream,
  ServerUnaryCall,
  ServerWritableStream,
  ServiceDefinition,
  UntypedHandleCall,
  UntypedServiceImplementation,
  handleServerStreamingCall,
  handleUnaryCall,
  sendUnaryData,
} from '@grpc/grpc-js';
import type { Logger } from '../../logging/logger.ts';
import { isServerFault, toGrpcError } from './errors.ts';
import { startGrpcServerSpan } from '../../observability/grpc.ts';
import { refuseNul } from '../../util/no-nul.ts';
import { Errors, OrchError } from '../../errors/catalog.ts';

type ReplyStream = ServerWritableStream<unknown, unknown> | ServerDuplexStream<unknown, unknown>;

/** The call object of any of the four kinds of handler; it is also the key handlers' context is stored under. */
export type GrpcCall = ServerUnaryCall<unknown, unknown> | ServerReadableStream<unknown, unknown> | ReplyStream;

/** Runs before a handler with the call and its full method path; throws (an OrchError) to refuse the call. */
export type CallGate = (call: GrpcCall, path: string) => Promise<void>;

export interface GuardOptions {
  gate?: CallGate;
  logger: Logger;
}

// Unary and client-streaming handlers take (call, callback), server-streaming and bidi ones (call); the
// wrappers below call each through the first type of its pair, which is the same shape at run time.
type Unary = handleUnaryCall<unknown, unknown>;
type ServerStream = handleServerStreamingCall<unknown, unknown>;

/**
 * A request the decoder refused (see decodingSafely) is INVALID_ARGUMENT before anything reads it, the gate
 * included. Client-streaming calls have no single request; their handlers read messages themselves.
 */
function refuseUndecodable(call: GrpcCall): void {
  const request = (call as { request?: unknown }).request;
  const undecodable = typeof request === 'object' && request !== null ? (request as { [UNDECODABLE]?: string })[UNDECODABLE] : undefined;
  if (undecodable !== undefined) throw new OrchError(Errors.BAD_REQUEST, `request could not be decoded: ${undecodable}`);
}

/**
 * A request message with a NUL in any string field is INVALID_ARGUMENT before its handler runs: no store can keep
 * it (util/no-nul.ts). `bytes` fields arrive as Buffers and are not strings.
 */
function refuseNulInRequest(call: GrpcCall): void {
  const request = (call as { request?: unknown }).request;
  if (request !== undefined) refuseNul(request, 'request');
}

const UNDECODABLE = Symbol('undecodable');

/**
 * The service definition with request decoding that cannot throw. A message the generated decoder refuses (a uint64
 * offset of 2^64-1 is beyond a safe JS number) would otherwise be answered INTERNAL by grpc-js itself; here it
 * becomes a marker that the guard answers INVALID_ARGUMENT. Pass the result to `server.addService`.
 */
export function decodingSafely<D extends ServiceDefinition>(definition: D): D {
  const out: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(definition)) {
    if (method.requestStream) {
      out[name] = method;
      continue;
    }
    const decode = method.requestDeserialize;
    out[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return decode(bytes);
        } catch (err) {
          return { [UNDECODABLE]: err instanceof Error ? err.message : String(err) };
        }
      },
    };
  }
  return out as D;
}

export function guardService<T extends UntypedServiceImplementation>(
  definition: ServiceDefinition,
  impl: T,
  options: GuardOptions,
): T {
  const out: UntypedServiceImplementation = {};
  for (const [name, method] of Object.entries(definition)) {
    const handler = impl[name];
    if (handler === undefined) throw new Error(`no handler for ${method.path}`);
    out[name] = guardHandler(method.path, method.responseStream, handler, options);
  }
  return out as T;
}

function guardHandler(path: string, responseStream: boolean, handler: UntypedHandleCall, options: GuardOptions): UntypedHandleCall {
  const { gate, logger } = options;
  const report = (err: unknown): void => {
    if (isServerFault(err)) logger.error({ err, method: path }, 'grpc call failed');
    else logger.debug({ err, method: path }, 'grpc call refused');
  };

  if (!responseStream) {
    // Unary and client-streaming: one callback answers the call; never let it fire twice.
    return (call: ServerUnaryCall<unknown, unknown> | ServerReadableStream<unknown, unknown>, callback: sendUnaryData<unknown>) => {
      const span = startGrpcServerSpan(path, call.metadata);
      let answered = false;
      const once: sendUnaryData<unknown> = (...args) => {
        if (answered) return;
        answered = true;
        span.end(args[0]);
        callback(...args);
      };
      const run = async (): Promise<void> => {
        refuseUndecodable(call);
        if (gate) await gate(call, path);
        refuseNulInRequest(call);
        const result: unknown = (handler as Unary)(call as ServerUnaryCall<unknown, unknown>, once);
        await result;
      };
      span.within(run).catch((err: unknown) => {
        report(err);
        once(toGrpcError(err));
      });
    };
  }

  // Server-streaming and bidi: the status is sent by ending the stream with an 'error' event.
  return (call: ReplyStream) => {
    const span = startGrpcServerSpan(path, call.metadata);
    call.once('finish', () => span.end());
    call.once('error', (err: unknown) => span.end(err));
    call.once('cancelled', () => span.end({ code: 1, details: 'cancelled by the client' }));
    const run = async (): Promise<void> => {
      refuseUndecodable(call);
      if (gate) await gate(call, path);
      refuseNulInRequest(call);
      const result: unknown = (handler as ServerStream)(call as ServerWritableStream<unknown, unknown>);
      await result;
    };
    span.within(run).catch((err: unknown) => {
      report(err);
      if (!call.writableEnded && !call.destroyed) call.emit('error', toGrpcError(err));
    });
  };
}
